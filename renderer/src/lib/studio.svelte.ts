// The session as the screens see it: what is open, the model being edited, the run being watched, the
// last evaluation. Every action is one or two API calls; components read this state and call these
// methods, nothing more.
import type {
  ApiError,
  ApiEvent,
  DatasetInfo,
  DatasetPreview,
  DeviceInfo,
  EarlyStopping,
  EarlyStoppingMonitor,
  EpochProgress,
  LrSchedule,
  EvaluationResult,
  ModelCheck,
  ModelInfo,
  ModelSpec,
  PayloadOf,
  PresetInfo,
  RunInfo,
  StepProgress,
  TrainingDone,
  TrainPlan,
  ClassificationReport,
} from '../../../app/api/types';
import { api, type ConnectionState } from './api';
import { CsvSetup } from './csvSetup.svelte';
import { dataSetup } from './dataSetup.svelte';
import { fileToBase64 } from './files';
import { browserFile, fileSource, pickFile, saveModelFile, type ModelFileFormat } from './platform';
import { layersText, newLayer, type LayerKind, type LayerSpec, type LossName } from './layers';
import { addPoint, emptySeries, type ThinSeries } from './series';

export type Screen = 'data' | 'model' | 'train' | 'evaluate' | 'models';

export interface RunView {
  runId: string;
  state: RunInfo['state'];
  plan?: TrainPlan;
  lastStep?: StepProgress;
  epochs: EpochProgress[];
  /** The per-step training loss, thinned to a few hundred points; x in epochs. */
  stepLoss: ThinSeries;
  done?: TrainingDone;
  /** The epochs of the run's last checkpoint: "Continue training" starts there. */
  checkpointEpoch?: number;
}

export type LrScheduleKind = LrSchedule['kind'];

export interface ShownEvaluation {
  title: string;
  report: ClassificationReport;
  count: number;
  loss?: number;
  /** For evaluation:examples (a confusion cell's examples); absent when the session no longer has them. */
  evaluationId?: string;
  /** The evaluated model (the digit canvas tries it). */
  modelId?: string;
}

/** A CSV chosen but not opened yet: its columns and their roles. */
export type PendingCsv = CsvSetup;

type Device = 'auto' | 'cpu' | 'cuda';

class Studio {
  screen = $state<Screen>('data');
  connection = $state<ConnectionState>('connecting');

  devices = $state.raw<DeviceInfo[]>([]);
  presets = $state.raw<PresetInfo[]>([]);

  // ---- data ----
  datasets = $state.raw<DatasetInfo[]>([]);
  datasetId = $state<string | undefined>();
  dataset = $derived(this.datasets.find((entry) => entry.id === this.datasetId));
  preview = $state.raw<DatasetPreview | undefined>();
  opening = $state(false);
  mnistError = $state<ApiError | undefined>();
  /** The MNIST opener's choices, kept while the user moves between screens. */
  mnistSplit = $state<'train' | 'test'>('train');
  mnistLimit = $state<number | null>(5000);
  csvError = $state<ApiError | undefined>();
  pendingCsv = $state<PendingCsv | undefined>();
  idxError = $state<ApiError | undefined>();

  // ---- model ----
  layers = $state<LayerSpec[]>([]);
  presetName = $state<string | undefined>();
  loss = $state<LossName>('softmax_cross_entropy');
  optimizer = $state<'sgd' | 'adam'>('adam');
  lr = $state<number | null>(0.001);
  momentum = $state<number | null>(0.9);
  seed = $state<number | null>(0);
  check = $state.raw<ModelCheck | undefined>();
  checkError = $state<ApiError | undefined>();
  modelText = $derived(layersText(this.layers));

  // ---- training ----
  batchSize = $state<number | null>(64);
  epochs = $state<number | null>(5);
  valSplit = $state<number | null>(0.1);
  device = $state<Device>('auto');
  run = $state<RunView | undefined>();
  starting = $state(false);
  trainError = $state<ApiError | undefined>();
  controlError = $state<ApiError | undefined>();
  // learning-rate schedule and early stopping (the Model screen's settings)
  lrScheduleKind = $state<LrScheduleKind>('constant');
  stepEveryEpochs = $state<number | null>(10);
  stepGamma = $state<number | null>(0.5);
  cosineMinLr = $state<number | null>(0);
  /** Empty: the learning rate above is the peak. */
  oneCycleMaxLr = $state<number | null>(null);
  oneCyclePctStart = $state<number | null>(0.3);
  oneCycleDivFactor = $state<number | null>(25);
  oneCycleFinalDivFactor = $state<number | null>(1e4);
  earlyStopMonitor = $state<'off' | EarlyStoppingMonitor>('off');
  earlyStopPatience = $state<number | null>(3);
  earlyStopMinDelta = $state<number | null>(0);
  earlyStopRestoreBest = $state(false);
  /** The learning rate typed while paused, for "Apply". */
  pausedLearningRate = $state<number | null>(null);

  // ---- evaluation and models ----
  models = $state.raw<ModelInfo[]>([]);
  evaluation = $state.raw<ShownEvaluation | undefined>();
  evaluating = $state(false);
  evaluateError = $state<ApiError | undefined>();
  importError = $state<ApiError | undefined>();
  /** The model being downloaded (one at a time) and the last download's error, by model id. */
  downloadingModelId = $state<string | undefined>();
  /** The format of the save in progress (the button that shows "Saving…"). */
  downloadingFormat = $state<ModelFileFormat | undefined>();
  downloadError = $state<{ modelId: string; error: ApiError } | undefined>();

  private earlyEvents: ApiEvent[] = [];
  private checkTimer: ReturnType<typeof setTimeout> | undefined;
  private checkSerial = 0;

  constructor() {
    api.onConnection?.((state) => {
      const reconnected = state === 'open' && this.connection !== 'open';
      this.connection = state;
      if (reconnected) void this.loadCatalog();
    });
    api.onEvent((event) => this.receive(event));
    // Electron's IPC has no connection to wait for.
    if (!api.onConnection) {
      this.connection = 'open';
      void this.loadCatalog();
    }
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
    if (datasets.result) this.datasets = datasets.result;
    if (models.result) this.models = models.result;
  }

  // ---- data ----

  async openMnist(split: 'train' | 'test', limit: number | null): Promise<void> {
    this.mnistError = undefined;
    const source: PayloadOf<'datasets:open'>['source'] = { kind: 'mnist', split, ...(limit ? { limit } : {}) };
    const error = await this.open(source);
    this.mnistError = error;
  }

  /** A dropped or picked File; without one (Electron), the native open dialog. */
  async chooseCsv(file?: File): Promise<void> {
    this.csvError = undefined;
    const picked = file ? browserFile(file) : await pickFile('dataset');
    if (!picked) return;
    if ('error' in picked) {
      this.csvError = picked.error;
      return;
    }
    if (!/\.(csv|txt|tsv)$/i.test(picked.name)) {
      this.pendingCsv = undefined;
      this.csvError = { message: `${picked.name} is not a CSV file (.csv)` };
      return;
    }
    this.pendingCsv = await CsvSetup.read(picked);
  }

  async openCsv(): Promise<void> {
    const pending = this.pendingCsv;
    if (!pending || pending.problem) return;
    this.csvError = undefined;
    const error = await this.open({ ...(await fileSource(pending.file)), csv: pending.options() });
    this.csvError = error;
    if (!error) this.pendingCsv = undefined;
  }

  /** An IDX images file and its labels file (MNIST's format, raw or .gz), uploaded together. */
  async openIdx(images: File, labels: File): Promise<void> {
    this.idxError = undefined;
    const [imagesBase64, labelsBase64] = await Promise.all([fileToBase64(images), fileToBase64(labels)]);
    this.idxError = await this.open({
      kind: 'upload',
      fileName: images.name,
      base64: imagesBase64,
      labels: { fileName: labels.name, base64: labelsBase64 },
    });
  }

  private async open(source: PayloadOf<'datasets:open'>['source']): Promise<ApiError | undefined> {
    this.opening = true;
    try {
      const opened = await api.invoke('datasets:open', { source });
      if (opened.error) return opened.error;
      this.datasets = [...this.datasets, opened.result];
      await this.selectDataset(opened.result.id);
      return undefined;
    } finally {
      this.opening = false;
    }
  }

  async selectDataset(id: string): Promise<void> {
    const changed = id !== this.datasetId;
    this.datasetId = id;
    this.preview = undefined;
    const preview = await api.invoke('datasets:preview', { datasetId: id, rows: this.dataset?.kind === 'images' ? 32 : 20 });
    if (preview.result && this.datasetId === id) this.preview = preview.result;
    if (changed && (this.layers.length === 0 || !this.check?.ok)) await this.useDefaultModel();
    else this.scheduleCheck();
  }

  async closeDataset(id: string): Promise<void> {
    const closed = await api.invoke('datasets:close', { datasetId: id });
    if (closed.error) return;
    this.datasets = this.datasets.filter((entry) => entry.id !== id);
    if (this.datasetId === id) {
      this.datasetId = undefined;
      this.preview = undefined;
      this.check = undefined;
      const next = this.datasets[this.datasets.length - 1];
      if (next) await this.selectDataset(next.id);
    }
  }

  // ---- model ----

  /** The API's default model for the open data (or a preset, fitted to it), loaded into the editor. */
  async useDefaultModel(preset?: string): Promise<void> {
    if (!this.datasetId) return;
    // This answer replaces the model: a check scheduled or in flight for the old layers must not land after it.
    clearTimeout(this.checkTimer);
    const serial = ++this.checkSerial;
    const checked = await api.invoke('models:check', { datasetId: this.datasetId, model: preset ? { preset } : {} });
    if (serial !== this.checkSerial) return;
    if (checked.error) {
      this.checkError = checked.error;
      return;
    }
    if (checked.result.spec) this.adoptSpec(checked.result.spec);
    this.presetName = preset;
    const training = this.presets.find((entry) => entry.name === preset)?.training;
    if (training) {
      this.batchSize = training.batchSize;
      this.epochs = training.epochs;
      this.adoptSchedule(training.lrSchedule ?? { kind: 'constant' });
    }
    this.check = checked.result;
    this.checkError = undefined;
  }

  private adoptSpec(spec: ModelSpec): void {
    this.layers = spec.layers.map((layer) => ({ ...layer }) as LayerSpec);
    this.loss = spec.loss;
    this.optimizer = spec.optimizer.kind;
    this.lr = spec.optimizer.lr;
    if (spec.optimizer.kind === 'sgd') this.momentum = spec.optimizer.momentum ?? 0;
    this.seed = spec.seed;
  }

  addLayer(kind: LayerKind): void {
    this.layers.push(newLayer(kind));
    this.modelEdited();
  }

  removeLayer(index: number): void {
    this.layers.splice(index, 1);
    this.modelEdited();
  }

  moveLayer(index: number, offset: -1 | 1): void {
    const target = index + offset;
    if (target < 0 || target >= this.layers.length) return;
    const [layer] = this.layers.splice(index, 1);
    this.layers.splice(target, 0, layer);
    this.modelEdited();
  }

  replaceLayer(index: number, kind: LayerKind): void {
    this.layers[index] = newLayer(kind);
    this.modelEdited();
  }

  /** Any edit: the preset no longer describes the model, and the check runs again shortly. */
  modelEdited(): void {
    this.presetName = undefined;
    this.scheduleCheck();
  }

  private modelChoice(): PayloadOf<'models:check'>['model'] {
    return {
      ...(this.layers.length ? { layers: this.modelText } : {}),
      loss: this.loss,
      optimizer: this.optimizer,
      ...(this.lr !== null ? { lr: this.lr } : {}),
      ...(this.optimizer === 'sgd' && this.momentum !== null ? { momentum: this.momentum } : {}),
      ...(this.seed !== null ? { seed: this.seed } : {}),
    };
  }

  scheduleCheck(): void {
    clearTimeout(this.checkTimer);
    this.checkTimer = setTimeout(() => void this.runCheck(), 150);
  }

  private async runCheck(): Promise<void> {
    if (!this.datasetId) return;
    if (this.layers.length === 0) {
      this.check = undefined;
      this.checkError = { message: 'add at least one layer', field: 'model.layers' };
      return;
    }
    const serial = ++this.checkSerial;
    const checked = await api.invoke('models:check', { datasetId: this.datasetId, model: this.modelChoice() });
    if (serial !== this.checkSerial) return;
    this.checkError = checked.error;
    if (checked.result) this.check = checked.result;
  }

  // ---- training ----

  canTrain = $derived(this.datasetId !== undefined && this.layers.length > 0 && this.check?.ok === true && !this.checkError);
  running = $derived(this.run !== undefined && this.run.state !== 'finished');

  async startTraining(): Promise<void> {
    if (!this.datasetId || this.running || this.starting) return;
    this.trainError = undefined;
    this.controlError = undefined;
    this.starting = true;
    this.earlyEvents = [];
    const datasetId = this.datasetId;
    const started = await api.invoke('training:start', {
      datasetId,
      model: this.modelChoice(),
      ...(this.epochs !== null ? { epochs: this.epochs } : {}),
      ...(this.batchSize !== null ? { batchSize: this.batchSize } : {}),
      ...(this.valSplit !== null ? { valSplit: this.valSplit } : {}),
      ...dataSetup.trainingOptions(this.dataset),
      ...(this.seed !== null ? { seed: this.seed } : {}),
      device: this.device,
      lrSchedule: this.lrScheduleChoice(),
      ...(this.earlyStopMonitor !== 'off' ? { earlyStopping: this.earlyStoppingChoice(this.earlyStopMonitor) } : {}),
    });
    this.starting = false;
    if (started.error) {
      this.trainError = started.error;
      return;
    }
    this.run = { runId: started.result.runId, state: 'starting', epochs: [], stepLoss: emptySeries() };
    for (const event of this.earlyEvents.splice(0)) this.receive(event);
  }

  /** A preset's recipe fills the schedule settings (fields it leaves out keep their values). */
  adoptSchedule(schedule: LrSchedule): void {
    this.lrScheduleKind = schedule.kind;
    if (schedule.kind === 'step') {
      if (schedule.everyEpochs !== undefined) this.stepEveryEpochs = schedule.everyEpochs;
      if (schedule.gamma !== undefined) this.stepGamma = schedule.gamma;
    } else if (schedule.kind === 'cosine') {
      if (schedule.minLr !== undefined) this.cosineMinLr = schedule.minLr;
    } else if (schedule.kind === 'onecycle') {
      this.oneCycleMaxLr = schedule.maxLr ?? null;
      if (schedule.pctStart !== undefined) this.oneCyclePctStart = schedule.pctStart;
      if (schedule.divFactor !== undefined) this.oneCycleDivFactor = schedule.divFactor;
      if (schedule.finalDivFactor !== undefined) this.oneCycleFinalDivFactor = schedule.finalDivFactor;
    }
  }

  lrScheduleChoice(): LrSchedule {
    switch (this.lrScheduleKind) {
      case 'step':
        return { kind: 'step', ...(this.stepEveryEpochs !== null ? { everyEpochs: this.stepEveryEpochs } : {}), ...(this.stepGamma !== null ? { gamma: this.stepGamma } : {}) };
      case 'cosine':
        return { kind: 'cosine', ...(this.cosineMinLr !== null ? { minLr: this.cosineMinLr } : {}) };
      case 'onecycle':
        return {
          kind: 'onecycle',
          ...(this.oneCycleMaxLr !== null ? { maxLr: this.oneCycleMaxLr } : {}),
          ...(this.oneCyclePctStart !== null ? { pctStart: this.oneCyclePctStart } : {}),
          ...(this.oneCycleDivFactor !== null ? { divFactor: this.oneCycleDivFactor } : {}),
          ...(this.oneCycleFinalDivFactor !== null ? { finalDivFactor: this.oneCycleFinalDivFactor } : {}),
        };
      default:
        return { kind: 'constant' };
    }
  }

  earlyStoppingChoice(monitor: EarlyStoppingMonitor): EarlyStopping {
    return {
      monitor,
      ...(this.earlyStopPatience !== null ? { patience: this.earlyStopPatience } : {}),
      ...(this.earlyStopMinDelta !== null ? { minDelta: this.earlyStopMinDelta } : {}),
      restoreBest: this.earlyStopRestoreBest,
    };
  }

  /** While paused: the base learning rate from the next step. */
  async applyLearningRate(): Promise<void> {
    const run = this.run;
    if (!run || this.pausedLearningRate === null) return;
    this.controlError = undefined;
    const answer = await api.invoke('training:setLearningRate', { runId: run.runId, lr: this.pausedLearningRate });
    if (answer.error) this.controlError = answer.error;
  }

  /** A finished run with a checkpoint goes on from it, to the Epochs setting's total. */
  canContinue = $derived(this.run !== undefined && this.run.state === 'finished' && this.run.checkpointEpoch !== undefined);

  async continueTraining(): Promise<void> {
    const previous = this.run;
    if (!previous || previous.checkpointEpoch === undefined || this.starting) return;
    this.controlError = undefined;
    this.starting = true;
    this.earlyEvents = [];
    const answer = await api.invoke('training:continue', {
      runId: previous.runId,
      ...(this.epochs !== null ? { epochs: this.epochs } : {}),
      device: this.device,
    });
    this.starting = false;
    if (answer.error) {
      this.controlError = answer.error;
      return;
    }
    const kept = previous.checkpointEpoch;
    this.run = {
      runId: answer.result.runId,
      state: 'starting',
      epochs: previous.epochs.filter((epoch) => epoch.epoch <= kept),
      stepLoss: emptySeries(),
    };
    for (const event of this.earlyEvents.splice(0)) this.receive(event);
  }

  async controlTraining(action: 'pause' | 'resume' | 'cancel'): Promise<void> {
    const run = this.run;
    if (!run) return;
    this.controlError = undefined;
    const answer = await api.invoke(`training:${action}`, { runId: run.runId });
    if (answer.error) this.controlError = answer.error;
    else if (this.run?.runId === run.runId && this.run.state !== 'finished') this.run.state = answer.result.state;
  }

  private receive(event: ApiEvent): void {
    const run = this.run;
    if (!run || run.runId !== event.payload.runId) {
      if (this.starting) this.earlyEvents.push(event);
      return;
    }
    if (event.event === 'training:done') {
      run.done = event.payload;
      run.state = 'finished';
      if (event.payload.plan) run.plan = event.payload.plan;
      const test = event.payload.test;
      if (test) {
        const { evaluationId, modelId } = event.payload;
        this.evaluation = { title: `Test set of ${run.runId}`, report: test.report, count: sum(test.report.perClass.map((row) => row.support)), loss: test.loss, evaluationId, modelId };
      }
      void this.refreshModels();
      return;
    }
    const progress = event.payload;
    if (progress.type === 'plan') {
      run.plan = progress.plan;
      if (run.state === 'starting') run.state = 'running';
    } else if (progress.type === 'step') {
      run.lastStep = progress;
      const x = progress.epoch - 1 + progress.step / progress.stepsPerEpoch;
      run.stepLoss = addPoint(run.stepLoss, { x, y: progress.loss });
      if (run.state === 'running') this.pausedLearningRate = Number(progress.learningRate.toPrecision(6));
    } else if (progress.type === 'checkpoint') {
      run.checkpointEpoch = progress.epoch;
    } else {
      run.epochs.push(progress);
    }
  }

  // ---- evaluation and models ----

  async refreshModels(): Promise<void> {
    const listed = await api.invoke('models:list', {});
    if (listed.result) this.models = listed.result;
  }

  async evaluate(modelId: string, datasetId: string): Promise<void> {
    this.evaluateError = undefined;
    this.evaluating = true;
    const answer = await api.invoke('evaluation:evaluate', { modelId, datasetId, device: this.device });
    this.evaluating = false;
    if (answer.error) {
      this.evaluateError = answer.error;
      return;
    }
    this.evaluation = describeEvaluation(answer.result, this.models, this.datasets);
    this.screen = 'evaluate';
  }

  /**
   * Saves a model file (.safetensors) or its ONNX export: a native save dialog in Electron, a download
   * named `<name>.safetensors` / `<name>.onnx` in a browser.
   */
  async downloadModel(modelId: string, format: ModelFileFormat = 'safetensors'): Promise<void> {
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

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

function describeEvaluation(result: EvaluationResult, models: readonly ModelInfo[], datasets: readonly DatasetInfo[]): ShownEvaluation {
  const model = models.find((entry) => entry.id === result.modelId)?.name ?? result.modelId;
  const data = datasets.find((entry) => entry.id === result.datasetId)?.name ?? result.datasetId;
  return { title: `${model} on ${data}`, report: result.report, count: result.count, loss: result.loss, evaluationId: result.evaluationId, modelId: result.modelId };
}

export const studio = new Studio();
