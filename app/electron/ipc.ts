// The UI API over Electron's IPC: one invoke channel carries `(channel, payload)` to the session's
// `dispatch` (which validates with zod and answers errors as values), one event channel pushes the
// session's events to the window. Two channels exist here only, for native dialogs: `dialog:openFile`
// and `dialog:saveFile`. A path reaches the engine only if the user chose it in one of those dialogs.
// Nothing here imports electron at run time: main.ts hands in ipcMain and dialog, so tests can too.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { BrowserWindow, Dialog, IpcMain, IpcMainInvokeEvent, OpenDialogOptions } from 'electron';
import { z } from 'zod';
import { downloadFileName, type Api } from '../api/session';
import { isChannel, payloadSchemas, type ParsedPayloadOf } from '../api/schemas';
import type { ApiError, ApiEvent, ApiResponse, ChosenFile, OpenFilePurpose, SaveFilePurpose } from '../api/types';
import { readHeadBytes } from '../core/data/compressedText';
import { DataError } from '../core/data/errors';
import { decodeTextHead } from '../core/data/textEncoding';
import { isTrustedSender, type SenderFrame } from './security';

/** The IPC channel names (the preload repeats them as literals, checked against these types). */
export const ipcChannels = { invoke: 'nnstudio:invoke', event: 'nnstudio:event' } as const;

/** The Electron-only channels, each with its zod schema like every API channel. */
export const dialogSchemas = {
  'dialog:openFile': z.strictObject({ purpose: z.enum(['dataset', 'model']) }),
  'dialog:saveFile': z.strictObject({ purpose: z.enum(['model', 'onnx', 'predictions']), defaultName: z.string().min(1).max(255) }),
} as const;

type DialogChannel = keyof typeof dialogSchemas;

const isDialogChannel = (channel: string): channel is DialogChannel => Object.prototype.hasOwnProperty.call(dialogSchemas, channel);

/** How much of a dataset file the open dialog returns, for the column choice. */
export const fileHeadBytes = 64 * 1024;

/** What the router needs of the native dialogs (main.ts gives Electron's; tests give fakes). */
export interface DialogBackend {
  /** The chosen file's path, or undefined when cancelled. */
  openFile(purpose: OpenFilePurpose): Promise<string | undefined>;
  /** The chosen destination, or undefined when cancelled. */
  saveFile(fileName: string, purpose: SaveFilePurpose): Promise<string | undefined>;
}

export interface IpcRouter {
  /** Answers one invoke: never throws, every failure is `{ error }`. */
  handle(sender: SenderFrame | null | undefined, channel: unknown, payload: unknown): Promise<ApiResponse<unknown>>;
  /** Whether `file` was chosen in a dialog this session (resolved). */
  wasChosen(file: string): boolean;
}

/** The paths a validated payload asks the engine to read or write, with the field that holds each. */
export function payloadPaths(channel: string, payload: unknown): { field: string; path: string }[] {
  if (channel === 'datasets:open') {
    const { source } = payload as ParsedPayloadOf<'datasets:open'>;
    if (source.kind !== 'path') return [];
    const paths = [{ field: 'source.path', path: source.path }];
    if (source.labelsPath !== undefined) paths.push({ field: 'source.labelsPath', path: source.labelsPath });
    return paths;
  }
  if (channel === 'models:import') {
    const { source } = payload as ParsedPayloadOf<'models:import'>;
    return source.kind === 'path' ? [{ field: 'source.path', path: source.path }] : [];
  }
  if (channel === 'models:save') return [{ field: 'path', path: (payload as ParsedPayloadOf<'models:save'>).path }];
  if (channel === 'models:predictFile') {
    const target = (payload as ParsedPayloadOf<'models:predictFile'>).path;
    return target === undefined ? [] : [{ field: 'path', path: target }];
  }
  if (channel === 'projects:open' || channel === 'projects:save') {
    // a bare name means a file in the projects folder, which the session chooses; a path must be checked
    const target = (payload as ParsedPayloadOf<'projects:open'>).path as string | undefined;
    return target !== undefined && /[\\/]/.test(target) ? [{ field: 'path', path: target }] : [];
  }
  return [];
}

/** A project the session opened or saved before (its recent list) may be opened again without a dialog. */
async function isRecentProject(api: Pick<Api, 'dispatch'>, channel: string, file: string): Promise<boolean> {
  if (channel !== 'projects:open') return false;
  const info = await api.dispatch('projects:info', {});
  const recent = (info.result as { recent?: string[] } | undefined)?.recent ?? [];
  return recent.some((entry) => path.resolve(entry) === file);
}

function validationError(channel: string, error: z.ZodError): ApiError {
  const issue = error.issues[0];
  const fieldPath = issue.path.map(String);
  if (issue.code === 'unrecognized_keys' && issue.keys.length > 0) fieldPath.push(issue.keys[0]);
  const field = fieldPath.length > 0 ? fieldPath.join('.') : undefined;
  return { message: `${channel}: ${field ? `${field}: ` : 'payload: '}${issue.message}`, field };
}

/** The first bytes of a chosen dataset file (decompressed when gzip) as text in its encoding (CSV header and a few rows), or what the file is instead. */
async function readHead(file: string): Promise<Pick<ChosenFile, 'head' | 'headProblem'>> {
  let bytes: Buffer;
  try {
    ({ bytes } = await readHeadBytes(file, fileHeadBytes));
  } catch (error) {
    if (error instanceof DataError) return { headProblem: error.detail };
    throw error;
  }
  const decoded = decodeTextHead(bytes);
  return 'text' in decoded ? { head: decoded.text } : { headProblem: decoded.problem };
}

export function createIpcRouter(api: Pick<Api, 'dispatch'>, dialogs: DialogBackend): IpcRouter {
  const chosen = new Set<string>();
  const remember = (file: string): string => {
    const resolved = path.resolve(file);
    chosen.add(resolved);
    return resolved;
  };

  async function dialog(channel: DialogChannel, payload: unknown): Promise<ApiResponse<unknown>> {
    const parsed = dialogSchemas[channel].safeParse(payload);
    if (!parsed.success) return { error: validationError(channel, parsed.error) };
    if (channel === 'dialog:openFile') {
      const { purpose } = parsed.data as z.output<(typeof dialogSchemas)['dialog:openFile']>;
      const file = await dialogs.openFile(purpose);
      if (file === undefined) return { result: null };
      const resolved = remember(file);
      const result: ChosenFile = { path: resolved, name: path.basename(resolved) };
      if (purpose === 'dataset') Object.assign(result, await readHead(resolved));
      return { result };
    }
    const { defaultName, purpose } = parsed.data as z.output<(typeof dialogSchemas)['dialog:saveFile']>;
    const file = await dialogs.saveFile(downloadFileName(defaultName, saveFilters[purpose].extension), purpose);
    return { result: file === undefined ? null : { path: remember(file) } };
  }

  async function handle(sender: SenderFrame | null | undefined, channel: unknown, payload: unknown): Promise<ApiResponse<unknown>> {
    if (!isTrustedSender(sender)) return { error: { message: 'refused: the request did not come from the NN Studio window' } };
    if (typeof channel !== 'string') return { error: { message: 'the channel must be a string', field: 'channel' } };
    try {
      if (isDialogChannel(channel)) return await dialog(channel, payload);
      if (isChannel(channel)) {
        const parsed = payloadSchemas[channel].safeParse(payload);
        // An invalid payload goes on to dispatch, which answers with the API's own validation error.
        if (parsed.success) {
          for (const entry of payloadPaths(channel, parsed.data)) {
            const resolved = path.resolve(entry.path);
            if (!chosen.has(resolved) && !(await isRecentProject(api, channel, resolved))) {
              return {
                error: { message: `${channel}: ${entry.field}: a file path must come from a file dialog (choose the file again)`, field: entry.field },
              };
            }
          }
        }
      }
      return await api.dispatch(channel, payload);
    } catch (error) {
      return { error: { message: error instanceof Error ? error.message : String(error) } };
    }
  }

  return { handle, wasChosen: (file) => chosen.has(path.resolve(file)) };
}

// ---- wiring to Electron (main.ts) ----

const openFilters: Record<OpenFilePurpose, { title: string; filters: OpenDialogOptions['filters'] }> = {
  dataset: {
    title: 'Open a dataset',
    filters: [
      { name: 'CSV or IDX data', extensions: ['csv', 'tsv', 'txt', 'idx', 'ubyte', 'gz'] },
      { name: 'All files', extensions: ['*'] },
    ],
  },
  model: {
    title: 'Import a model file',
    filters: [
      { name: 'Model files', extensions: ['safetensors', 'm'] },
      { name: 'All files', extensions: ['*'] },
    ],
  },
};

const saveFilters: Record<SaveFilePurpose, { title: string; extension: string; filter: { name: string; extensions: string[] } }> = {
  model: { title: 'Save the model file', extension: '.safetensors', filter: { name: 'Model files', extensions: ['safetensors'] } },
  onnx: { title: 'Export the model as ONNX', extension: '.onnx', filter: { name: 'ONNX models', extensions: ['onnx'] } },
  predictions: { title: 'Save the predictions', extension: '.csv', filter: { name: 'CSV files', extensions: ['csv'] } },
};

/** Native dialogs attached to `window` (modal to it); save suggests `defaultFolder`. */
export function electronDialogs(dialog: Pick<Dialog, 'showOpenDialog' | 'showSaveDialog'>, window: () => BrowserWindow | undefined, defaultFolder: () => string): DialogBackend {
  return {
    async openFile(purpose) {
      const { title, filters } = openFilters[purpose];
      const options: OpenDialogOptions = { title, filters, properties: ['openFile'] };
      const parent = window();
      const answer = parent ? await dialog.showOpenDialog(parent, options) : await dialog.showOpenDialog(options);
      return answer.canceled ? undefined : answer.filePaths[0];
    },
    async saveFile(fileName, purpose) {
      const { title, filter } = saveFilters[purpose];
      const options = {
        title,
        defaultPath: path.join(defaultFolder(), fileName),
        filters: [filter],
        properties: ['createDirectory', 'showOverwriteConfirmation'] as ('createDirectory' | 'showOverwriteConfirmation')[],
      };
      const parent = window();
      const answer = parent ? await dialog.showSaveDialog(parent, options) : await dialog.showSaveDialog(options);
      return answer.canceled || !answer.filePath ? undefined : answer.filePath;
    },
  };
}

/** The frame fields the trust check reads; a frame gone or navigated away is untrusted. */
export function senderOf(event: Pick<IpcMainInvokeEvent, 'senderFrame'>): SenderFrame | undefined {
  const frame = event.senderFrame;
  if (!frame) return undefined;
  return { url: frame.url, isMainFrame: frame.parent === null };
}

export interface IpcWiring {
  ipcMain: Pick<IpcMain, 'handle' | 'removeHandler'>;
  api: Pick<Api, 'dispatch' | 'subscribe'>;
  dialogs: DialogBackend;
  /** The windows to send events to (those still open). */
  windows: () => { webContents: { isDestroyed(): boolean; send(channel: string, ...args: unknown[]): void } }[];
}

/** Registers the invoke handler and forwards every session event; returns the function that undoes both. */
export function registerIpc(wiring: IpcWiring): () => void {
  const router = createIpcRouter(wiring.api, wiring.dialogs);
  wiring.ipcMain.handle(ipcChannels.invoke, (event, channel: unknown, payload: unknown) => router.handle(senderOf(event), channel, payload));
  const unsubscribe = wiring.api.subscribe((event: ApiEvent) => {
    for (const window of wiring.windows()) {
      if (!window.webContents.isDestroyed()) window.webContents.send(ipcChannels.event, event);
    }
  });
  return () => {
    unsubscribe();
    wiring.ipcMain.removeHandler(ipcChannels.invoke);
  };
}
