// The Model screen: the layers being edited, the model's settings (loss, optimizer, learning rate, seed), the
// preset they came from and the API's check of them against the selected dataset (models:check, run again
// shortly after every edit; a late answer for older layers is dropped).
import type { ApiError, DatasetInfo, ModelCheck, ModelSpec, PayloadOf, PresetInfo, Workspace } from '../../../../app/api/types';
import { api } from '../api';
import { layersText, newLayer, type LayerKind, type LayerSpec, type LossName } from '../layers';

export type ModelChoice = PayloadOf<'models:check'>['model'];

/** The settings as the inputs hold them (null: empty, the server's default). */
export interface ModelSettingsDraft {
  loss: LossName;
  optimizer: 'sgd' | 'adam' | 'adamw';
  lr: number | null;
  momentum: number | null;
  /** SGD: Nesterov momentum. */
  nesterov: boolean;
  /** Softmax cross-entropy: how much the one-hot targets are smoothed; null or 0: none. */
  labelSmoothing: number | null;
  /** L2 penalty on the weights; null: the model's default (1e-2 for the default table model, else 0). */
  weightDecay: number | null;
  seed: number | null;
}

export interface ModelDeps {
  datasetId(): string | undefined;
  dataset(): DatasetInfo | undefined;
  presets(): readonly PresetInfo[];
  /** A CUDA device is available (some presets need one). */
  hasGpu(): boolean;
  /** A preset's training recipe (batch size, epochs, schedule, augmentation) fills the training settings. */
  adoptTraining(training: PresetInfo['training']): void;
  /** The user changed the model (a finished run's results no longer describe it). */
  edited(): void;
}

const checkDelayMs = 150;

export class ModelState {
  /** The layer list as edited; the Model screen's rows bind to these layer objects. */
  layers = $state<LayerSpec[]>([]);
  readonly settings = $state<ModelSettingsDraft>({ loss: 'softmax_cross_entropy', optimizer: 'adam', lr: 0.001, momentum: 0.9, nesterov: false, labelSmoothing: null, weightDecay: null, seed: 0 });
  /** The preset the model came from; any edit clears it. */
  presetName = $state<string | undefined>();
  check = $state.raw<ModelCheck | undefined>();
  checkError = $state<ApiError | undefined>();
  /** The same model in `nnstudio train --layers` syntax. */
  modelText = $derived(layersText(this.layers));
  /** Layers that fit the selected data, with no error pending. */
  ready = $derived.by(() => this.deps.datasetId() !== undefined && this.layers.length > 0 && this.check?.ok === true && !this.checkError);

  private readonly deps: ModelDeps;
  private checkTimer: ReturnType<typeof setTimeout> | undefined;
  private checkSerial = 0;

  constructor(deps: ModelDeps) {
    this.deps = deps;
  }

  /** A dataset was selected: a new one gets the default model unless the edited model fits; else check again. */
  async followDataset(changed: boolean): Promise<void> {
    if (changed && (this.layers.length === 0 || !this.check?.ok)) await this.useDefaultModel();
    else this.scheduleCheck();
  }

  /** The selected dataset was closed: its check no longer applies. */
  forgetCheck(): void {
    this.check = undefined;
  }

  /** The API's default model for the open data (or a preset, fitted to it), loaded into the editor. */
  async useDefaultModel(preset?: string): Promise<void> {
    const datasetId = this.deps.datasetId();
    if (!datasetId) return;
    // This answer replaces the model: a check scheduled or in flight for the old layers must not land after it.
    clearTimeout(this.checkTimer);
    const serial = ++this.checkSerial;
    const checked = await api.invoke('models:check', { datasetId, model: preset ? { preset } : {} });
    if (serial !== this.checkSerial) return;
    if (checked.error) {
      this.checkError = checked.error;
      return;
    }
    if (checked.result.spec) this.adoptSpec(checked.result.spec);
    this.presetName = preset;
    const training = this.deps.presets().find((entry) => entry.name === preset)?.training;
    if (training) this.deps.adoptTraining(training);
    this.check = checked.result;
    this.checkError = undefined;
  }

  private adoptSpec(spec: ModelSpec): void {
    this.layers = spec.layers.map((layer) => ({ ...layer }) as LayerSpec);
    const settings = this.settings;
    settings.loss = spec.loss;
    settings.optimizer = spec.optimizer.kind;
    settings.lr = spec.optimizer.lr;
    if (spec.optimizer.kind === 'sgd') {
      settings.momentum = spec.optimizer.momentum ?? 0;
      settings.nesterov = spec.optimizer.nesterov ?? false;
    }
    settings.labelSmoothing = spec.labelSmoothing ?? null;
    settings.weightDecay = spec.optimizer.weightDecay ?? 0;
    settings.seed = spec.seed;
  }

  /** Why a preset cannot be used now, or undefined. */
  presetUnavailable(preset: PresetInfo): string | undefined {
    if (preset.gpuOnly && !this.deps.hasGpu()) return 'needs an NVIDIA GPU';
    const dataset = this.deps.dataset();
    // Convolutions and pools need images (channels × height × width); a table's rows are flat.
    const flatData = dataset !== undefined && dataset.featureShape.length !== 3;
    if (flatData && preset.spec.layers.some((layer) => /conv|pool/.test(layer.kind))) return `needs image data; ${dataset.name} has flat rows`;
    return undefined;
  }

  // ---- editing ----

  addLayer(kind: LayerKind): void {
    this.layers.push(newLayer(kind));
    this.edited();
  }

  removeLayer(index: number): void {
    this.layers.splice(index, 1);
    this.edited();
  }

  moveLayer(index: number, offset: -1 | 1): void {
    const target = index + offset;
    if (target < 0 || target >= this.layers.length) return;
    const [layer] = this.layers.splice(index, 1);
    this.layers.splice(target, 0, layer);
    this.edited();
  }

  replaceLayer(index: number, kind: LayerKind): void {
    this.layers[index] = newLayer(kind);
    this.edited();
  }

  /** A field of a layer changed; the editor has one kernel field, so a conv2d kernel stays square. */
  layerEdited(layer: LayerSpec, field?: 'kernel'): void {
    if (field === 'kernel' && layer.kind === 'conv2d') layer.kernel[1] = layer.kernel[0];
    this.edited();
  }

  /** Any edit (a layer, a setting): the preset no longer describes the model, and the check runs again shortly. */
  edited(): void {
    this.presetName = undefined;
    this.deps.edited();
    this.scheduleCheck();
  }

  // ---- the session's workspace ----

  snapshot(): NonNullable<Workspace['model']> {
    return {
      layers: $state.snapshot(this.layers) as unknown as NonNullable<Workspace['model']>['layers'],
      settings: $state.snapshot(this.settings) as NonNullable<Workspace['model']>['settings'],
      ...(this.presetName ? { presetName: this.presetName } : {}),
    };
  }

  /** The layers and settings kept by the session (a reload, another tab's edit, a project); checked again. */
  restore(saved: NonNullable<Workspace['model']>): void {
    this.layers = structuredClone(saved.layers) as unknown as LayerSpec[];
    Object.assign(this.settings, saved.settings);
    this.presetName = saved.presetName;
    this.scheduleCheck();
  }

  // ---- the check ----

  /** models:check's and training:start's model: the layers and the settings that are set. */
  choice(): ModelChoice {
    const { loss, optimizer, lr, momentum, nesterov, labelSmoothing, weightDecay, seed } = this.settings;
    return {
      ...(this.layers.length ? { layers: this.modelText } : {}),
      loss,
      optimizer,
      ...(lr !== null ? { lr } : {}),
      ...(optimizer === 'sgd' && momentum !== null ? { momentum } : {}),
      ...(optimizer === 'sgd' && nesterov ? { nesterov: true } : {}),
      ...(loss === 'softmax_cross_entropy' && labelSmoothing ? { labelSmoothing } : {}),
      ...(weightDecay !== null ? { weightDecay } : {}),
      ...(seed !== null ? { seed } : {}),
    };
  }

  private scheduleCheck(): void {
    clearTimeout(this.checkTimer);
    this.checkTimer = setTimeout(() => void this.runCheck(), checkDelayMs);
  }

  private async runCheck(): Promise<void> {
    const datasetId = this.deps.datasetId();
    if (!datasetId) return;
    if (this.layers.length === 0) {
      this.check = undefined;
      this.checkError = { message: 'add at least one layer', field: 'model.layers' };
      return;
    }
    const serial = ++this.checkSerial;
    const checked = await api.invoke('models:check', { datasetId, model: this.choice() });
    if (serial !== this.checkSerial) return;
    this.checkError = checked.error;
    if (checked.result) this.check = checked.result;
  }
}
