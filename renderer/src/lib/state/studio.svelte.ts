// The session as the screens see it: one state per screen (Data, Model, Train, Evaluate, Models), each with its
// own $state and actions, wired here; the root keeps only the screen shown, the connection and the catalog
// (devices, presets). Components read these states and call their actions; none assigns a field (inputs bind
// to the draft objects the states own).
import type { DeviceInfo, PresetInfo } from '../../../../app/api/types';
import { api, type ConnectionState } from '../api';
import { DataState } from './dataState.svelte';
import { EvaluateState } from './evaluateState.svelte';
import { ModelState } from './modelState.svelte';
import { ModelsState } from './modelsState.svelte';
import { PredictFileState } from './predictFileState.svelte';
import { SavedRunsState } from './savedRunsState.svelte';
import { TrainState } from './trainState.svelte';

export type Screen = 'data' | 'model' | 'train' | 'evaluate' | 'models';

class Studio {
  screen = $state<Screen>('data');
  connection = $state<ConnectionState>('connecting');
  devices = $state.raw<DeviceInfo[]>([]);
  presets = $state.raw<PresetInfo[]>([]);
  /** What the catalog could not load (devices, presets, datasets, models), shown above every screen. */
  catalogError = $state<string | undefined>(undefined);

  readonly models: ModelsState = new ModelsState();
  readonly savedRuns: SavedRunsState = new SavedRunsState({
    models: () => this.models.models,
    refreshModels: () => this.models.refresh(),
  });
  readonly data: DataState = new DataState({
    selected: (changed) => this.model.followDataset(changed),
    deselected: () => this.model.forgetCheck(),
  });
  readonly model: ModelState = new ModelState({
    datasetId: () => this.data.datasetId,
    dataset: () => this.data.dataset,
    presets: () => this.presets,
    hasGpu: () => this.devices.some((device) => device.kind === 'cuda'),
    adoptTraining: (training) => this.train.adoptPresetTraining(training),
  });
  readonly train: TrainState = new TrainState({
    datasetId: () => this.data.datasetId,
    dataOptions: () => ({ ...this.data.split.trainingOptions(this.data.dataset), ...this.data.imputation.trainingOptions(this.data.dataset) }),
    modelChoice: () => this.model.choice(),
    seed: () => this.model.settings.seed,
    modelReady: () => this.model.ready,
    ended: (run, done) => {
      this.evaluate.showTestResult(run.runId, done);
      void this.models.refresh();
    },
  });
  readonly evaluate: EvaluateState = new EvaluateState({
    models: () => this.models.models,
    datasets: () => this.data.datasets,
    device: () => this.train.settings.device,
    evaluated: () => this.show('evaluate'),
  });

  readonly predictFile: PredictFileState = new PredictFileState({
    models: () => this.models.models,
    datasets: () => this.data.datasets,
    selectedDatasetId: () => this.data.datasetId,
    device: () => this.train.settings.device,
  });

  constructor() {
    api.onConnection?.((state) => {
      const reconnected = state === 'open' && this.connection !== 'open';
      this.connection = state;
      if (reconnected) void this.loadCatalog();
    });
    api.onEvent((event) => {
      this.train.receive(event);
      if (event.event === 'training:done') this.savedRuns.runRecorded();
    });
    // Electron's IPC has no connection to wait for.
    if (!api.onConnection) {
      this.connection = 'open';
      void this.loadCatalog();
    }
  }

  show(screen: Screen): void {
    this.screen = screen;
  }

  private async loadCatalog(): Promise<void> {
    const [devices, presets, datasets, models] = await Promise.all([
      api.invoke('devices:list', {}),
      api.invoke('models:presets', {}),
      api.invoke('datasets:list', {}),
      api.invoke('models:list', {}),
    ]);
    if (devices.result) this.devices = devices.result;
    if (presets.result) this.presets = presets.result;
    if (datasets.result) this.data.listed(datasets.result);
    if (models.result) this.models.listed(models.result);
    // a part that failed is said, not left empty without a word
    const failed = [
      ['devices', devices.error],
      ['model presets', presets.error],
      ['datasets', datasets.error],
      ['models', models.error],
    ].filter(([, error]) => error) as [string, { message: string }][];
    for (const [what, error] of failed) console.error(`NN Studio: could not load the ${what}: ${error.message}`);
    this.catalogError = failed.length
      ? `Could not load ${failed.map(([what, error]) => `the ${what} (${error.message})`).join('; ')}. Reload the page to try again.`
      : undefined;
  }
}

export const studio = new Studio();
export const dataState = studio.data;
export const modelState = studio.model;
export const trainState = studio.train;
export const evaluateState = studio.evaluate;
export const modelsState = studio.models;
export const savedRunsState = studio.savedRuns;
export const predictFileState = studio.predictFile;
