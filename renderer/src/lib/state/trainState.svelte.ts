// The Train screen: the training settings (edited on the Model screen), the run being watched with its live
// progress, and the controls: start, pause, resume, cancel, a new learning rate while paused, continue from
// the last checkpoint. Events that arrive before training:start answers wait in earlyEvents.
import type {
  ApiError,
  ApiEvent,
  ApiResponse,
  EpochProgress,
  PayloadOf,
  PresetInfo,
  RunInfo,
  StepProgress,
  TrainingDone,
  TrainingProgress,
  TrainPlan,
  Workspace,
} from '../../../../app/api/types';
import { api } from '../api';
import { addPoint, emptySeries, type ThinSeries } from '../series';
import type { ModelChoice } from './modelState.svelte';
import type { ImputationState } from './imputationState.svelte';
import type { SplitState } from './splitState.svelte';
import { adoptPresetTraining, gpuDefaultPrecision, newTrainingDraft, trainingOptions, type TrainingDraft } from './trainingDrafts';

export interface RunView {
  runId: string;
  /** The data it trains on: another dataset selected hides a finished run. */
  datasetId: string;
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

/** The learning rate typed while paused, for "Apply" (it follows the run's rate while it runs). */
export interface LearningRateDraft {
  learningRate: number | null;
}

export interface TrainDeps {
  datasetId(): string | undefined;
  /** The Data screen's shares, normalisation and missing-cell choices for the selected dataset. */
  dataOptions(): ReturnType<SplitState['trainingOptions']> & ReturnType<ImputationState['trainingOptions']>;
  modelChoice(): ModelChoice;
  seed(): number | null;
  /** The model fits the selected data. */
  modelReady(): boolean;
  /** The selected data are images (augmentation applies). */
  imageData(): boolean;
  /** Sends the edits still waiting for their timer: the settings a run starts from are the session's first. */
  keepDrafts(): void;
  /** The watched run ended (its test evaluation and its model are ready to show). */
  ended(run: RunView, done: TrainingDone): void;
}

type Control = 'pause' | 'resume' | 'cancel';
type TrainingEvent = Extract<ApiEvent, { event: 'training:progress' | 'training:done' }>;

export class TrainState {
  readonly settings = $state<TrainingDraft>(newTrainingDraft());
  readonly pausedRate = $state<LearningRateDraft>({ learningRate: null });
  /** "Continue training" adds this many epochs to the shown run's checkpoint. */
  readonly continuation = $state<{ moreEpochs: number | null }>({ moreEpochs: null });
  run = $state<RunView | undefined>();
  starting = $state(false);
  trainError = $state<ApiError | undefined>();
  controlError = $state<ApiError | undefined>();

  canTrain = $derived.by(() => this.deps.modelReady());
  running = $derived(this.run !== undefined && this.run.state !== 'finished');
  /** A finished run with a checkpoint goes on from it, to the Epochs setting's total. */
  canContinue = $derived(this.run !== undefined && this.run.state === 'finished' && this.run.checkpointEpoch !== undefined);

  private readonly deps: TrainDeps;
  private earlyEvents: TrainingEvent[] = [];
  /** A training:list for a run this page was not told of is on its way (discover). */
  private discovering = false;

  constructor(deps: TrainDeps) {
    this.deps = deps;
  }

  /** A preset's recipe: batch size, epochs, schedule and augmentation (adoptPresetTraining in trainingDrafts.ts). */
  adoptPresetTraining(training: PresetInfo['training']): void {
    adoptPresetTraining(this.settings, training);
  }

  // ---- starting ----

  async start(): Promise<void> {
    const datasetId = this.deps.datasetId();
    if (!datasetId || this.running || this.starting) return;
    this.trainError = undefined;
    this.controlError = undefined;
    const options = trainingOptions(this.settings, this.deps.imageData());
    if (options.problem) {
      this.trainError = options.problem;
      return;
    }
    const seed = this.deps.seed();
    const payload: PayloadOf<'training:start'> = {
      datasetId,
      model: this.deps.modelChoice(),
      ...this.deps.dataOptions(),
      ...(seed !== null ? { seed } : {}),
      ...options.value,
    };
    await this.launch(
      datasetId,
      () => api.invoke('training:start', payload),
      (error) => (this.trainError = error),
      [],
    );
  }

  /** The shown run goes on from its checkpoint for `continuation.moreEpochs` more epochs, as a new run. */
  async continueTraining(): Promise<void> {
    const previous = this.run;
    const moreEpochs = this.continuation.moreEpochs;
    if (!previous || previous.checkpointEpoch === undefined || this.starting) return;
    this.controlError = undefined;
    if (moreEpochs === null || !Number.isInteger(moreEpochs) || moreEpochs < 1) {
      this.controlError = { message: 'Epochs to add: a whole number, at least 1', field: 'moreEpochs' };
      return;
    }
    const kept = previous.checkpointEpoch;
    await this.launch(
      previous.datasetId,
      () => api.invoke('training:continue', { runId: previous.runId, moreEpochs, device: this.settings.device }),
      (error) => (this.controlError = error),
      previous.epochs.filter((epoch) => epoch.epoch <= kept),
    );
  }

  /** Sends the start; on an answer, watches the new run (with the epochs it carries over) and replays early events. */
  private async launch(
    datasetId: string,
    send: () => Promise<ApiResponse<{ runId: string }>>,
    failed: (error: ApiError) => void,
    epochs: EpochProgress[],
  ): Promise<void> {
    this.starting = true;
    this.earlyEvents = [];
    // the same socket, in order: a reload once the start is answered finds these edits kept
    this.deps.keepDrafts();
    const answer = await send();
    this.starting = false;
    if (answer.error) {
      failed(answer.error);
      return;
    }
    this.run = { runId: answer.result.runId, datasetId, state: 'starting', epochs, stepLoss: emptySeries() };
    for (const event of this.earlyEvents.splice(0)) this.receive(event);
  }

  // ---- controls ----

  async control(action: Control): Promise<void> {
    const run = this.run;
    if (!run) return;
    this.controlError = undefined;
    const answer = await api.invoke(`training:${action}`, { runId: run.runId });
    if (answer.error) this.controlError = answer.error;
    else if (this.run?.runId === run.runId && this.run.state !== 'finished') this.run.state = answer.result.state;
  }

  /** While paused: the base learning rate from the next step. */
  async applyLearningRate(): Promise<void> {
    const run = this.run;
    const lr = this.pausedRate.learningRate;
    if (!run || lr === null) return;
    this.controlError = undefined;
    const answer = await api.invoke('training:setLearningRate', { runId: run.runId, lr });
    if (answer.error) this.controlError = answer.error;
  }

  // ---- events ----

  receive(event: TrainingEvent): void {
    const run = this.run;
    if (!run || run.runId !== event.payload.runId) {
      if (this.starting) this.earlyEvents.push(event);
      else if (event.event === 'training:progress' && (!run || run.state === 'finished')) void this.discover(event.payload.runId);
      return;
    }
    if (event.event === 'training:done') this.finish(run, event.payload);
    else this.progress(run, event.payload);
  }

  private finish(run: RunView, done: TrainingDone): void {
    run.done = done;
    run.state = 'finished';
    if (done.plan) run.plan = done.plan;
    this.suggestMoreEpochs(run);
    this.deps.ended(run, done);
  }

  /** What "Continue training" offers: the epochs the plan has left, or the Epochs setting once it is done. */
  private suggestMoreEpochs(run: RunView): void {
    const left = (run.plan?.epochs ?? 0) - (run.checkpointEpoch ?? 0);
    this.continuation.moreEpochs = left > 0 ? left : (this.settings.epochs ?? 5);
  }

  // ---- the session's workspace ----

  /** Watches a run the session already has (a reload, another tab's run): its state, curves and outcome so far. */
  attach(info: RunInfo): void {
    if (this.run?.runId === info.runId) return;
    const stepLoss = (info.stepLoss ?? []).reduce((series, point) => addPoint(series, point), emptySeries());
    const run: RunView = {
      runId: info.runId,
      datasetId: info.datasetId,
      state: info.state,
      epochs: [...info.epochs],
      stepLoss,
      ...(info.plan ? { plan: info.plan } : {}),
      ...(info.lastStep ? { lastStep: info.lastStep } : {}),
      ...(info.checkpointEpoch !== undefined ? { checkpointEpoch: info.checkpointEpoch } : {}),
    };
    this.run = run;
    if (info.outcome) {
      run.done = info.outcome;
      this.suggestMoreEpochs(run);
    }
  }

  /**
   * A live run this page was not told of (no workspace names it): a reload that came before the session
   * registered the run this page had started, or another client of the session's API. It is the session's
   * one live run, so the Train screen shows it rather than nothing, with a Start that would be refused.
   */
  private async discover(runId: string): Promise<void> {
    if (this.discovering) return;
    this.discovering = true;
    try {
      const answer = await api.invoke('training:list', {});
      const live = answer.result?.find((info) => info.runId === runId && info.state !== 'finished');
      if (live && !this.starting && (!this.run || this.run.state === 'finished')) this.attach(live);
    } finally {
      this.discovering = false;
    }
  }

  /** No run shown (the session's workspace names none, or not one it still has). */
  detach(): void {
    if (!this.starting) this.run = undefined;
  }

  /** The data or the model changed: a finished run's results no longer describe them (the run stays in Models). */
  forgetFinishedRun(datasetId?: string): void {
    if (this.run?.state === 'finished' && (datasetId === undefined || this.run.datasetId !== datasetId)) this.run = undefined;
  }

  /** The settings to save; the GPU arithmetic only where it is not the default, so that a saved session follows a new default. */
  settingsSnapshot(): NonNullable<Workspace['training']> {
    const { precision, ...rest } = $state.snapshot(this.settings);
    return { ...rest, ...(precision !== gpuDefaultPrecision ? { precision } : {}) } as NonNullable<Workspace['training']>;
  }

  restoreSettings(saved: NonNullable<Workspace['training']>): void {
    Object.assign(this.settings.schedule, saved.schedule);
    Object.assign(this.settings.earlyStopping, saved.earlyStopping);
    if (saved.augment) Object.assign(this.settings.augment, saved.augment);
    this.settings.ema = saved.ema ?? null;
    this.settings.gpus = [...(saved.gpus ?? [])];
    this.settings.precision = saved.precision ?? gpuDefaultPrecision;
    this.settings.batchSize = saved.batchSize;
    this.settings.epochs = saved.epochs;
    this.settings.device = saved.device;
  }

  private progress(run: RunView, progress: TrainingProgress): void {
    if (progress.type === 'plan') {
      run.plan = progress.plan;
      if (run.state === 'starting') run.state = 'running';
    } else if (progress.type === 'step') {
      run.lastStep = progress;
      const x = progress.epoch - 1 + progress.step / progress.stepsPerEpoch;
      run.stepLoss = addPoint(run.stepLoss, { x, y: progress.loss });
      if (run.state === 'running') this.pausedRate.learningRate = Number(progress.learningRate.toPrecision(6));
    } else if (progress.type === 'checkpoint') {
      run.checkpointEpoch = progress.epoch;
    } else if (progress.epoch > (run.epochs[run.epochs.length - 1]?.epoch ?? 0)) {
      // an epoch a page attaching to the run already has from training:list is not added twice
      run.epochs.push(progress);
    }
  }
}
