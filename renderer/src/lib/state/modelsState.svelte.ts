// The Models screen: the session's models (trained, imported, opened from a saved run), saving or exporting
// one, importing a model file, and the two runs picked for comparison (kept across screens).
import type { ApiError, ModelInfo } from '../../../../app/api/types';
import { api } from '../api';
import { browserFile, fileSource, pickFile, saveModelFile, type ModelFileFormat } from '../platform';

export type ComparedSide = 'first' | 'second';

export class ModelsState {
  models = $state.raw<ModelInfo[]>([]);
  importError = $state<ApiError | undefined>();
  /** The model being downloaded (one at a time) and the format of that save (the button that shows "Saving…"). */
  downloadingModelId = $state<string | undefined>();
  downloadingFormat = $state<ModelFileFormat | undefined>();
  /** The last download's error, by model id. */
  downloadError = $state<{ modelId: string; error: ApiError } | undefined>();

  /** The runs the user picked to compare, by model id. */
  private readonly comparedIds = $state<Record<ComparedSide, string | undefined>>({ first: undefined, second: undefined });
  /** Until the user picks: the two newest models, newest second (the usual question is "did my change help?"). */
  compared = $derived.by(() => {
    const models = this.models;
    const first = models.find((model) => model.id === this.comparedIds.first) ?? models[models.length - 2] ?? models[0];
    const second = models.find((model) => model.id === this.comparedIds.second) ?? models[models.length - 1];
    return { first, second };
  });

  /** The session's models as the catalog lists them (on connecting). */
  listed(models: ModelInfo[]): void {
    this.models = models;
  }

  async refresh(): Promise<void> {
    const listed = await api.invoke('models:list', {});
    if (listed.result) this.models = listed.result;
  }

  pickCompared(side: ComparedSide, modelId: string): void {
    this.comparedIds[side] = modelId;
  }

  /**
   * Saves a model file (.safetensors) or its ONNX export: a native save dialog in Electron, a download
   * named `<name>.safetensors` / `<name>.onnx` in a browser.
   */
  async download(modelId: string, format: ModelFileFormat = 'safetensors'): Promise<void> {
    if (this.downloadingModelId) return;
    this.downloadError = undefined;
    this.downloadingModelId = modelId;
    this.downloadingFormat = format;
    try {
      const name = this.models.find((model) => model.id === modelId)?.name ?? modelId;
      const error = await saveModelFile(modelId, name, format);
      if (error) this.downloadError = { modelId, error };
    } catch (error) {
      const what = format === 'onnx' ? 'export the model as ONNX' : 'save the model file';
      this.downloadError = { modelId, error: { message: `cannot ${what}: ${(error as Error).message}` } };
    } finally {
      this.downloadingModelId = undefined;
      this.downloadingFormat = undefined;
    }
  }

  /** A picked File; without one (Electron), the native open dialog. */
  async importModel(file?: File): Promise<void> {
    this.importError = undefined;
    const picked = file ? browserFile(file) : await pickFile('model');
    if (!picked) return;
    if ('error' in picked) {
      this.importError = picked.error;
      return;
    }
    const answer = await api.invoke('models:import', { source: await fileSource(picked) });
    if (answer.error) this.importError = answer.error;
    else this.models = [...this.models, answer.result];
  }
}
