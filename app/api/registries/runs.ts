// The session's training runs by id: training:start and :continue translate the payload into a request for
// the services' one training path (services.training.train); the run's events become its RunInfo and
// training:progress; its end keeps the model (and the test set's outputs) and sends training:done.
// Each run writes its checkpoint into the session folder, which is what training:continue starts from.
import type { GpuChoice } from '../../core/model/gpuChoice';
import { headOfDataset } from '../../core/model/head';
import { addPoint, emptySeries, type ThinSeries } from '../../core/metrics/thinSeries';
import { regressionView } from './evaluations';
import type { RunNaming, RunStore } from '../../services/runs';
import { services } from '../../services';
import { TrainingControl, type ResumeRequest, type TrainEvent, type TrainingEnding, type TrainOutcome, type TrainRequest } from '../../services/training';
import { errorValue } from '../errors';
import type { ParsedPayloadOf } from '../schemas';
import type { RunInfo, TrainingDone, TrainingProgress } from '../types';
import type { DatasetRecord, DatasetRegistry } from './datasets';
import type { EvaluationRegistry } from './evaluations';
import type { SessionEvents } from './events';
import type { IdSequence } from './ids';
import type { ModelRegistry } from './models';
import type { SessionFolder } from './sessionFolder';

interface RunEntry {
  info: RunInfo;
  control: TrainingControl;
  /** Settles (never rejects) when the run is finished and training:done was sent. */
  finished: Promise<void>;
  /** Where the run writes its checkpoint every epoch (in the session's folder). */
  checkpointPath: string;
  /** The dataset's display name, for the model's name. */
  datasetName: string;
  /** How the run history names the run's data; a continued run keeps it. */
  naming: RunNaming;
  /** The per-step loss, thinned: a page that attaches to the run later draws the whole curve. */
  stepLoss: ThinSeries;
}

/** What a new run is, besides its request. */
interface Launch {
  runId: string;
  datasetId: string;
  datasetName: string;
  checkpointPath: string;
  naming: RunNaming;
  continuedFrom?: string;
}

export interface RunRegistryWiring {
  ids: IdSequence;
  folder: SessionFolder;
  events: SessionEvents;
  datasets: DatasetRegistry;
  models: ModelRegistry;
  evaluations: EvaluationRegistry;
  /** Where finished runs are recorded; undefined records none. */
  history: RunStore | undefined;
  /** Why nothing else may train now (a search going), or undefined. */
  busy?: () => string | undefined;
}

export class RunRegistry {
  private readonly records = new Map<string, RunEntry>();

  constructor(private readonly wiring: RunRegistryWiring) {}

  private get(id: string): RunEntry {
    const record = this.records.get(id);
    if (!record) throw new Error(`no training run with id "${id}"`);
    return record;
  }

  async start(payload: ParsedPayloadOf<'training:start'>): Promise<{ runId: string }> {
    const { datasets, ids, folder } = this.wiring;
    const data = datasets.get(payload.datasetId);
    const testData = payload.testDatasetId !== undefined ? datasets.get(payload.testDatasetId) : undefined;
    if (data.info.unlabeled) {
      throw Object.assign(new Error(`${data.info.name} was opened without a label column (to predict with a model): open it again with its label column to train on it`), { field: 'datasetId' });
    }
    const model = payload.model ?? {};
    // The model's errors are known now: answer them at once rather than in training:done.
    const check = services.models.check(model, data.dataset.featureShape, headOfDataset(data.dataset));
    if (!check.ok) throw new Error(check.error?.message ?? 'invalid model');
    if (payload.earlyStopping && payload.earlyStopping.monitor !== 'trainLoss' && payload.valSplit === 0) {
      throw new Error(`early stopping on ${payload.earlyStopping.monitor} needs a validation split above 0`);
    }
    // GPUs that this machine or device cannot give: answered now, not in training:done
    if (payload.gpus !== undefined) services.training.gpus(gpuChoiceOf(payload.gpus), payload.device);
    this.refuseWhileAnotherRuns();
    const runId = ids.next('run');
    const checkpointPath = await folder.checkpointFile(runId);
    this.refuseWhileAnotherRuns();  // again: a run or search may have started while the folder was made
    const request = trainRequestOf(payload, data, testData, checkpointPath);
    this.launch({ runId, datasetId: payload.datasetId, datasetName: data.info.name, checkpointPath, naming: namingOf(data, testData) }, request);
    return { runId };
  }

  /** A finished run's last checkpoint, continued as a new run with a checkpoint file of its own. */
  async continue(payload: ParsedPayloadOf<'training:continue'>): Promise<{ runId: string }> {
    const previous = this.get(payload.runId);
    const { info } = previous;
    if (info.state !== 'finished') throw new Error(`training run ${payload.runId} is still going: pause or cancel it first`);
    if (info.checkpointEpoch === undefined) {
      throw new Error(`training run ${payload.runId} has no checkpoint to continue from (it ended before its first epoch did)`);
    }
    if (payload.moreEpochs !== undefined && payload.epochs !== undefined) throw Object.assign(new Error('give the epochs to add or the new total, not both'), { field: 'moreEpochs' });
    this.refuseWhileAnotherRuns();
    const runId = this.wiring.ids.next('run');
    const checkpointPath = await this.wiring.folder.checkpointFile(runId);
    this.refuseWhileAnotherRuns();  // again, as in start
    const epochs = payload.moreEpochs !== undefined ? info.checkpointEpoch + payload.moreEpochs : payload.epochs;
    const request: ResumeRequest = { resumeFrom: previous.checkpointPath, epochs, device: payload.device, checkpointPath };
    // The run history records it like the first run (the same data, named the same way).
    const { datasetId } = info;
    this.launch({ runId, datasetId, datasetName: previous.datasetName, checkpointPath, naming: previous.naming, continuedFrom: payload.runId }, request);
    return { runId };
  }

  /**
   * One training at a time in a session: a second one would share the CPU or GPU with the first and slow
   * both, and a tab that started it could not see why. The answer says which run and how to free the way.
   */
  private refuseWhileAnotherRuns(): void {
    const why = this.running() ?? this.wiring.busy?.();
    if (why) throw new Error(why);
  }

  /** Why another run may not start: the run going, or undefined. */
  running(): string | undefined {
    const going = [...this.records.values()].find((run) => run.info.state !== 'finished');
    if (!going) return undefined;
    const { info } = going;
    const where = info.lastStep && info.plan ? ` (epoch ${info.lastStep.epoch} of ${info.plan.epochs})` : '';
    return `${info.runId} is still training${where}: wait for it to finish, or cancel it on the Train screen, before starting another`;
  }

  private launch(run: Launch, request: TrainRequest | ResumeRequest): void {
    const control = new TrainingControl();
    const info: RunInfo = { runId: run.runId, datasetId: run.datasetId, state: 'starting', epochs: [], ...(run.continuedFrom ? { continuedFrom: run.continuedFrom } : {}) };
    const entry: RunEntry = { info, control, finished: Promise.resolve(), checkpointPath: run.checkpointPath, datasetName: run.datasetName, naming: run.naming, stepLoss: emptySeries() };
    this.records.set(run.runId, entry);
    const { history } = this.wiring;
    const training = services.training.train(request, {
      onEvent: (event) => this.progress(entry, event),
      control,
      ...(history ? { history: { store: history, naming: run.naming } } : {}),
    });
    entry.finished = services.training
      .settle(training)
      .then((ending) => this.finish(entry, ending))
      .catch((error: unknown) => this.done(entry, failedRun(entry, error)));
  }

  /** The run's events as its RunInfo and training:progress (a checkpoint's file stays in the session). */
  private progress(entry: RunEntry, event: TrainEvent): void {
    const { info, control } = entry;
    const { runId } = info;
    const emit = (payload: TrainingProgress) => this.wiring.events.emit({ event: 'training:progress', payload });
    switch (event.type) {
      case 'plan':
        info.plan = event.plan;
        if (info.state === 'starting') info.state = control.paused ? 'paused' : 'running';
        return emit({ runId, type: 'plan', plan: event.plan });
      case 'checkpoint':
        info.checkpointEpoch = event.epoch;
        return emit({ runId, type: 'checkpoint', epoch: event.epoch });
      case 'step':
        info.lastStep = event;
        entry.stepLoss = addPoint(entry.stepLoss, { x: event.epoch - 1 + event.step / event.stepsPerEpoch, y: event.loss });
        return emit({ runId, ...event });
      case 'epoch':
        info.epochs.push(event);
        return emit({ runId, ...event });
    }
  }

  /** Keeps what the run trained (also when a failure stopped it) and says how it ended. */
  private finish(entry: RunEntry, { outcome, failure }: TrainingEnding): void {
    if (!outcome) return this.done(entry, failedRun(entry, failure));
    const { models, evaluations } = this.wiring;
    const modelId = models.add({ name: `${entry.datasetName} (${entry.info.runId})`, model: outcome.model });
    const tested = outcome.testPredictions;
    const evaluationId = tested && evaluations.keep({
      modelId,
      predictions: { classLabels: outcome.model.labels, inputShape: outcome.model.inputShape, ...tested },
    });
    this.done(entry, trainingDone(entry.info.runId, outcome, failure, modelId, evaluationId));
  }

  private done({ info }: RunEntry, done: TrainingDone): void {
    info.state = 'finished';
    info.outcome = done;
    this.wiring.events.emit({ event: 'training:done', payload: done });
  }

  // ---- control ----

  setLearningRate(runId: string, lr: number): RunInfo {
    const record = this.get(runId);
    const { info, control } = record;
    // 'starting' (data loading) counts as running: the control applies the rate when the engine starts
    if (info.state !== 'running' && info.state !== 'paused' && info.state !== 'starting') {
      throw new Error(`training run ${runId} is ${info.state}: the learning rate can change only while it runs or is paused`);
    }
    control.setLearningRate(lr);
    return runInfo(record);
  }

  control(runId: string, action: 'pause' | 'resume' | 'cancel'): RunInfo {
    const record = this.get(runId);
    const { info, control } = record;
    if (info.state === 'finished') throw new Error(`training run ${runId} has already finished (${info.outcome?.status})`);
    if (action === 'pause') {
      control.pause();
      if (info.state === 'running') info.state = 'paused';
    } else if (action === 'resume') {
      control.resume();
      if (info.state === 'paused') info.state = 'running';
    } else {
      control.cancel();
      info.state = 'cancelling';
    }
    return runInfo(record);
  }

  status(runId: string): RunInfo {
    return runInfo(this.get(runId));
  }

  /** Every run of the session, oldest first, with its per-step loss (a page attaching to a run draws it all). */
  list(): RunInfo[] {
    return [...this.records.values()].map((record) => ({ ...runInfo(record), stepLoss: [...record.stepLoss.points] }));
  }

  // ---- the session's end ----

  /** Whether a run that has not finished reads this dataset. */
  readsDataset(datasetId: string): boolean {
    return [...this.records.values()].some((run) => run.info.state !== 'finished' && run.info.datasetId === datasetId);
  }

  /** The runs not finished yet. */
  unfinished(): string[] {
    return [...this.records.values()].filter((run) => run.info.state !== 'finished').map((run) => run.info.runId);
  }

  checkpointFiles(): string[] {
    return [...this.records.values()].map((run) => run.checkpointPath);
  }

  /** Cancels every run; settles when each has ended and sent its training:done (the engine stops within a step). */
  stopAll(): Promise<void> {
    for (const run of this.records.values()) run.control.cancel();
    return Promise.all([...this.records.values()].map((run) => run.finished)).then(() => undefined);
  }
}

// ---- translations ----

function runInfo(record: RunEntry): RunInfo {
  return { ...record.info, epochs: [...record.info.epochs] };
}

function trainRequestOf(payload: ParsedPayloadOf<'training:start'>, data: DatasetRecord, testData: DatasetRecord | undefined, checkpointPath: string): TrainRequest {
  return {
    data: data.source,
    testData: testData?.source,
    model: payload.model ?? {},
    normalize: payload.normalize,
    epochs: payload.epochs,
    batchSize: payload.batchSize,
    valSplit: payload.valSplit,
    testSplit: payload.testSplit,
    seed: payload.seed,
    device: payload.device,
    threads: payload.threads,
    lrSchedule: payload.lrSchedule,
    earlyStopping: payload.earlyStopping,
    ...(payload.imputation ? { imputation: payload.imputation } : {}),
    ...(payload.classWeights ? { classWeights: payload.classWeights } : {}),
    ...(payload.augment ? { augment: payload.augment } : {}),
    ...(payload.ema !== undefined ? { ema: payload.ema } : {}),
    ...(payload.gpus !== undefined ? { gpus: gpuChoiceOf(payload.gpus) } : {}),
    ...(payload.precision ? { precision: payload.precision } : {}),
    checkpointPath,
  };
}

function gpuChoiceOf(gpus: 'all' | number | number[]): GpuChoice {
  if (gpus === 'all') return { kind: 'all' };
  return typeof gpus === 'number' ? { kind: 'count', count: gpus } : { kind: 'list', gpus };
}

/** An upload's path is a temporary file: the run history names it as the user does. */
export function namingOf(data: DatasetRecord, testData: DatasetRecord | undefined): RunNaming {
  return {
    ...(data.uploadedFiles.length > 0 ? { dataName: data.info.name, dataDescription: data.info.description } : {}),
    ...(testData ? { testDataDescription: testData.info.description } : {}),
  };
}

function failedRun({ info }: RunEntry, error: unknown): TrainingDone {
  return { runId: info.runId, status: 'failed', message: errorValue(error).message, history: [], plan: info.plan };
}

/** `stopped`: a failure ended a run that had trained (a checkpoint not written): status failed, its model kept. */
export function trainingDone(runId: string, outcome: TrainOutcome, stopped: Error | undefined, modelId: string, evaluationId: string | undefined): TrainingDone {
  const saved = outcome.savedRun;
  return {
    runId,
    status: stopped ? 'failed' : outcome.status,
    message: stopped ? stopped.message : outcome.message,
    modelId,
    history: outcome.model.training?.history ?? [],
    test: outcome.test && {
      loss: outcome.test.loss, report: outcome.test.report,
      ...(outcome.test.regression ? { regression: outcome.test.regression } : {}),
      ...(outcome.testPredictions?.regression ? { details: regressionView(outcome.testPredictions.regression, outcome.testPredictions.data) } : {}),
    },
    plan: outcome.plan,
    seconds: outcome.model.training?.seconds,
    ...(evaluationId ? { evaluationId } : {}),
    ...(outcome.stoppedEarly ? { stoppedEarly: true } : {}),
    ...(outcome.bestEpoch !== undefined ? { bestEpoch: outcome.bestEpoch } : {}),
    ...(saved?.runId ? { savedRunId: saved.runId } : {}),
    ...(saved?.error !== undefined ? { savedRunError: `the run was not recorded in the run history: ${saved.error}` } : {}),
  };
}
