// The session as the screens see it: one state per screen (Data, Model, Train, Evaluate, Models), each with its
// own $state and actions, wired here; the root keeps only the screen shown, the connection and the catalog
// (devices, presets). Components read these states and call their actions; none assigns a field (inputs bind
// to the draft objects the states own).
import type { DeviceInfo, PresetInfo, RunInfo, Workspace } from '../../../../app/api/types';
import { api, type ConnectionState } from '../api';
import { DataState } from './dataState.svelte';
import { EvaluateState } from './evaluateState.svelte';
import { ModelState } from './modelState.svelte';
import { ModelsState } from './modelsState.svelte';
import { PredictFileState } from './predictFileState.svelte';
import { SavedRunsState } from './savedRunsState.svelte';
import { SearchState } from './searchState.svelte';
import { TrainState } from './trainState.svelte';
import { WorkspaceSync } from './workspaceSync.svelte';
import { ProjectState } from './projectState.svelte';

export type Screen = 'data' | 'model' | 'train' | 'search' | 'evaluate' | 'models';

const screens: readonly Screen[] = ['data', 'model', 'train', 'search', 'evaluate', 'models'];

/** The screen this tab showed before a reload (each tab has its own). */
function savedScreen(): Screen {
  const saved = sessionStorage.getItem('nnstudio.screen') as Screen | null;
  return saved && screens.includes(saved) ? saved : 'data';
}

class Studio {
  screen = $state<Screen>(savedScreen());
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
    selected: (changed) => {
      if (changed) this.train.forgetFinishedRun(this.data.datasetId);
      return this.model.followDataset(changed);
    },
    deselected: () => this.model.forgetCheck(),
  });
  readonly model: ModelState = new ModelState({
    datasetId: () => this.data.datasetId,
    dataset: () => this.data.dataset,
    presets: () => this.presets,
    hasGpu: () => this.devices.some((device) => device.kind === 'cuda'),
    adoptTraining: (training) => this.train.adoptPresetTraining(training),
    edited: () => this.train.forgetFinishedRun(),
  });
  readonly train: TrainState = new TrainState({
    datasetId: () => this.data.datasetId,
    dataOptions: () => ({ ...this.data.split.trainingOptions(this.data.dataset), ...this.data.imputation.trainingOptions(this.data.dataset) }),
    modelChoice: () => this.model.choice(),
    seed: () => this.model.settings.seed,
    modelReady: () => this.model.ready,
    imageData: () => this.data.dataset?.kind === 'images',
    keepDrafts: () => void this.workspace.flush(),
    ended: (run, done) => {
      this.evaluate.showTestResult(run.runId, done);
      void this.models.refresh();
    },
  });
  readonly search: SearchState = new SearchState({
    datasetId: () => this.data.datasetId,
    device: () => this.train.settings.device,
    precision: () => this.train.settings.precision,
    ended: () => {
      void this.models.refresh();
      this.savedRuns.runRecorded();
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

  readonly project: ProjectState = new ProjectState({ reloadCatalog: () => this.reloadLists(), flushWorkspace: () => this.workspace.flush() });
  readonly workspace: WorkspaceSync = new WorkspaceSync({ capture: () => this.captureWorkspace(), apply: (state, runs) => this.applyWorkspace(state, runs) });

  constructor() {
    api.onConnection?.((state) => {
      const reconnected = state === 'open' && this.connection !== 'open';
      this.connection = state;
      if (reconnected) void this.loadCatalog();
    });
    api.onEvent((event) => {
      if (event.event === 'workspace:changed') return void this.workspace.changed(event.payload);
      if (event.event === 'session:changed') return void this.reloadLists(event.payload.lists);
      if (event.event === 'search:progress' || event.event === 'search:done') return void this.search.receive(event);
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
    sessionStorage.setItem('nnstudio.screen', screen);
  }

  /** What the session keeps of the screens (workspace:update). */
  private captureWorkspace(): Workspace {
    const evaluation = this.evaluate.evaluation?.origin;
    return {
      ...(this.data.datasetId ? { datasetId: this.data.datasetId } : {}),
      split: this.data.split.snapshot(),
      imputation: this.data.imputation.snapshot(),
      model: this.model.snapshot(),
      training: this.train.settingsSnapshot(),
      ...(this.train.run ? { watchedRunId: this.train.run.runId } : {}),
      ...(evaluation ? { shownEvaluation: evaluation } : {}),
    };
  }

  /** The session's datasets and models listed again (opened, closed or renamed in this tab or another; a project opened). */
  private async reloadLists(lists: readonly ('datasets' | 'models')[] = ['datasets', 'models']): Promise<void> {
    const [datasets, models] = await Promise.all([
      lists.includes('datasets') ? api.invoke('datasets:list', {}) : undefined,
      lists.includes('models') ? api.invoke('models:list', {}) : undefined,
    ]);
    if (datasets?.result) this.data.listed(datasets.result);
    if (models?.result) this.models.listed(models.result);
    void this.project.refresh();
  }

  /** The session's workspace on the screens: drafts first, then the dataset (keeping the model), the run and the evaluation. */
  private async applyWorkspace(state: Workspace, runs: readonly RunInfo[]): Promise<void> {
    // a dataset this page has not listed: the session changed under it (a project opened)
    if (state.datasetId && !this.data.datasets.some((entry) => entry.id === state.datasetId)) await this.reloadLists();
    if (state.split) this.data.split.restore(state.split);
    if (state.imputation) this.data.imputation.restore(state.imputation);
    if (state.training) this.train.restoreSettings(state.training);
    if (state.model) this.model.restore(state.model);
    const dataset = this.data.datasets.find((entry) => entry.id === state.datasetId);
    if (dataset && dataset.id !== this.data.datasetId) await this.data.selectDataset(dataset.id, true);
    // A live run is shown even when the workspace does not name it yet: a reload can come before the page
    // sent the workspace that names a run it has just started.
    const watched = runs.find((run) => run.runId === state.watchedRunId) ?? runs.find((run) => run.state !== 'finished');
    if (watched) this.train.attach(watched);
    else this.train.detach();
    await this.evaluate.restore(state.shownEvaluation, runs);
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
    void this.project.refresh();
    await this.workspace.restore();
    await this.search.attachLatest();
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
export const searchState = studio.search;
export const evaluateState = studio.evaluate;
export const modelsState = studio.models;
export const savedRunsState = studio.savedRuns;
export const predictFileState = studio.predictFile;
export const projectState = studio.project;
