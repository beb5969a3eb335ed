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
} from '../../../../app/api/types';
import { api } from '../api';
import { addPoint, emptySeries, type ThinSeries } from '../series';
import type { ModelChoice } from './modelState.svelte';
import type { ImputationState } from './imputationState.svelte';
import type { SplitState } from './splitState.svelte';
import { adoptPresetTraining, newTrainingDraft, trainingOptions, type TrainingDraft } from './trainingDrafts';

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
  /** The watched run ended (its test evaluation and its model are ready to show). */
  ended(run: RunView, done: TrainingDone): void;
}

type Control = 'pause' | 'resume' | 'cancel';

export class TrainState {
  readonly settings = $state<TrainingDraft>(newTrainingDraft());
  readonly pausedRate = $state<LearningRateDraft>({ learningRate: null });
  run = $state<RunView | undefined>();
  starting = $state(false);
  trainError = $state<ApiError | undefined>();
  controlError = $state<ApiError | undefined>();

  canTrain = $derived.by(() => this.deps.modelReady());
  running = $derived(this.run !== undefined && this.run.state !== 'finished');
  /** A finished run with a checkpoint goes on from it, to the Epochs setting's total. */
  canContinue = $derived(this.run !== undefined && this.run.state === 'finished' && this.run.checkpointEpoch !== undefined);

  private readonly deps: TrainDeps;
  private earlyEvents: ApiEvent[] = [];

  constructor(deps: TrainDeps) {
    this.deps = deps;
  }

  /** A preset's recipe: batch size, epochs and schedule. */
  adoptPresetTraining(training: PresetInfo['training']): void {
    adoptPresetTraining(this.settings, training);
  }

  // ---- starting ----

  async start(): Promise<void> {
    const datasetId = this.deps.datasetId();
    if (!datasetId || this.running || this.starting) return;
    this.trainError = undefined;
    this.controlError = undefined;
    const options = trainingOptions(this.settings);
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
      () => api.invoke('training:start', payload),
      (error) => (this.trainError = error),
      [],
    );
  }

  async continueTraining(): Promise<void> {
    const previous = this.run;
    if (!previous || previous.checkpointEpoch === undefined || this.starting) return;
    this.controlError = undefined;
    const { epochs, device } = this.settings;
    const kept = previous.checkpointEpoch;
    await this.launch(
      () => api.invoke('training:continue', { runId: previous.runId, ...(epochs !== null ? { epochs } : {}), device }),
      (error) => (this.controlError = error),
      previous.epochs.filter((epoch) => epoch.epoch <= kept),
    );
  }

  /** Sends the start; on an answer, watches the new run (with the epochs it carries over) and replays early events. */
  private async launch(
    send: () => Promise<ApiResponse<{ runId: string }>>,
    failed: (error: ApiError) => void,
    epochs: EpochProgress[],
  ): Promise<void> {
    this.starting = true;
    this.earlyEvents = [];
    const answer = await send();
    this.starting = false;
    if (answer.error) {
      failed(answer.error);
      return;
    }
    this.run = { runId: answer.result.runId, state: 'starting', epochs, stepLoss: emptySeries() };
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

  receive(event: ApiEvent): void {
    const run = this.run;
    if (!run || run.runId !== event.payload.runId) {
      if (this.starting) this.earlyEvents.push(event);
      return;
    }
    if (event.event === 'training:done') this.finish(run, event.payload);
    else this.progress(run, event.payload);
  }

  private finish(run: RunView, done: TrainingDone): void {
    run.done = done;
    run.state = 'finished';
    if (done.plan) run.plan = done.plan;
    this.deps.ended(run, done);
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
    } else {
      run.epochs.push(progress);
    }
  }
}
