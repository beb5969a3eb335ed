// Where the user's files come from and go to. In Electron: native dialogs, and the engine reads or writes
// the chosen path itself (the main process only accepts paths chosen in its dialogs). In a browser
// (`serve`): the page's file input or a drop, sent as an upload, and saving as a download.
import type { ApiError, OpenFilePurpose } from '../../../app/api/types';
import { api, desktop } from './api';
import { base64ToBytes, fileToBase64, saveBytes } from './files';

/** A file the user picked: a browser File (input or drop), or a path chosen in Electron's dialog. */
export interface PickedFile {
  name: string;
  file?: File;
  path?: string;
  /** Electron, datasets: the file's first 64 KiB as text. */
  head?: string;
  /** Electron, datasets: what the file is when it is not text (app/core/data/textEncoding.ts). */
  headProblem?: string;
}

/** The file as datasets:open and models:import take it: its path (Electron) or its bytes (browser). */
export type FileSource = { kind: 'path'; path: string } | { kind: 'upload'; fileName: string; base64: string };

/** True in Electron: "Choose a file…" opens the native dialog instead of the page's file input. */
export const nativeDialogs = desktop !== undefined;

export const browserFile = (file: File): PickedFile => ({ name: file.name, file });

/** Electron's open dialog: the chosen file, undefined when cancelled, or an error value. */
export async function pickFile(purpose: OpenFilePurpose): Promise<PickedFile | { error: ApiError } | undefined> {
  if (!desktop) return { error: { message: 'file dialogs exist in the desktop app only' } };
  const answer = await desktop.dialogs.openFile({ purpose });
  if (answer.error) return { error: answer.error };
  return answer.result ?? undefined;
}

export async function fileSource(picked: PickedFile): Promise<FileSource> {
  if (picked.path !== undefined) return { kind: 'path', path: picked.path };
  if (!picked.file) throw new Error(`no file to read for ${picked.name}`);
  return { kind: 'upload', fileName: picked.name, base64: await fileToBase64(picked.file) };
}

/** What a model can be saved as: its own .safetensors file, or an ONNX export. */
export type ModelFileFormat = 'safetensors' | 'onnx';

/**
 * Saves a model as a file of `format`. Electron: a native save dialog, then the engine writes there
 * (models:save with the format). A browser: the bytes from models:download (.safetensors) or
 * models:export (.onnx), then a download named `<name>.<extension>`. Cancelling is not an error.
 */
export async function saveModelFile(modelId: string, name: string, format: ModelFileFormat = 'safetensors'): Promise<ApiError | undefined> {
  if (desktop) {
    const chosen = await desktop.dialogs.saveFile({ purpose: format === 'onnx' ? 'onnx' : 'model', defaultName: name });
    if (chosen.error) return chosen.error;
    if (!chosen.result) return undefined;
    const saved = await api.invoke('models:save', { modelId, path: chosen.result.path, format });
    return saved.error;
  }
  const answer = format === 'onnx'
    ? await api.invoke('models:export', { modelId, format })
    : await api.invoke('models:download', { modelId });
  if (answer.error) return answer.error;
  saveBytes(answer.result.fileName, base64ToBytes(answer.result.base64));
  return undefined;
}

/**
 * Saves a file's predictions as CSV. Electron: a native save dialog, then the engine writes there
 * (models:predictFile with the path, predicting again). A browser: a download of the CSV already shown.
 */
export async function savePredictions(prediction: { modelId: string; datasetId: string; fileName: string; csv: string }, device?: 'auto' | 'cpu' | 'cuda'): Promise<ApiError | undefined> {
  if (desktop) {
    const chosen = await desktop.dialogs.saveFile({ purpose: 'predictions', defaultName: prediction.fileName.replace(/\.csv$/i, '') });
    if (chosen.error) return chosen.error;
    if (!chosen.result) return undefined;
    const saved = await api.invoke('models:predictFile', { modelId: prediction.modelId, datasetId: prediction.datasetId, path: chosen.result.path, ...(device ? { device } : {}) });
    return saved.error;
  }
  saveBytes(prediction.fileName, new TextEncoder().encode(prediction.csv), 'text/csv');
  return undefined;
}
