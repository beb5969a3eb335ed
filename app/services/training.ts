// The training service: data → split → normalisation → spec → engine run → test metrics → a Model ready
// to save. The CLI, `serve` and the desktop window all train through `trainModel`. With `checkpointPath`
// a checkpoint (app/core/model/checkpointFile.ts) is written atomically after every epoch; `resumeFrom`
// rebuilds the same run from one (same data, split, normalisation, seed) and continues it exactly.
import type { Dataset } from '../core/data/dataset';
import { applyNormalization, fitNormalization, preprocessingSchema, type NormalizationKind, type Preprocessing } from '../core/data/preprocess';
import { builtinMnistCounts } from '../core/data/mnist';
import { stratifiedSplit, subset } from '../core/data/split';
import { classificationReport, type ClassificationReport } from '../core/metrics/classification';
import { checkCount, countLimits } from '../core/model/countLimits';
import { defaultTraining } from '../core/model/defaults';
import type { EpochRecord, Model } from '../core/model/modelFile';
import type { ModelSpec } from '../core/model/spec';
import * as engine from '../engine';
import { loadCheckpoint, saveCheckpoint, type Checkpoint } from '../core/model/checkpointFile';
import { describeDataSource, knownData, loadDataSource, loadDataSourceFor, type DataSource } from './dataSources';
import { buildModelSpec, type ModelChoice } from './modelSpecs';
import { datasetDigest, parseRunRecord, type RunRecord } from './runRecord';

export interface TrainRequest {
  data: DataSource;
  /** A separate test file; otherwise MNIST's test half, or `testSplit` of the data. */
  testData?: DataSource;
  model: ModelChoice;
  /** Default: none for images (pixels are already in [0,1]), zscore for tabular data. */
  normalize?: NormalizationKind;
  epochs?: number;
  batchSize?: number;
  /** Fraction of the training data held out for validation curves (default 0.1). */
  valSplit?: number;
  /** Fraction held out for the test metrics when there is no separate test set (default 0.2). */
  testSplit?: number;
  seed?: number;
  device?: engine.DeviceChoice;
  threads?: number;
  /** Default constant. */
  lrSchedule?: engine.LrSchedule;
  earlyStopping?: engine.EarlyStopping;
  /** Write a checkpoint here (atomically) after every epoch. */
  checkpointPath?: string;
}

/**
 * Continue the run of a checkpoint: its data, split, normalisation, spec, seed, batch size, schedule and
 * early stopping; `epochs` is the new total (default: the run's), device and threads may change (the CPU
 * gives the same bits with the same thread count).
 */
export interface ResumeRequest {
  resumeFrom: string;
  epochs?: number;
  device?: engine.DeviceChoice;
  threads?: number;
  /** Default: keep writing to `resumeFrom`. */
  checkpointPath?: string;
}

/** Everything a face shows before the first step. */
export interface TrainPlan {
  spec: ModelSpec;
  device: engine.DeviceKind;
  epochs: number;
  batchSize: number;
  trainCount: number;
  validationCount: number;
  testCount: number;
  classLabels: string[];
  dataDescription: string;
  /** The checkpoint a resumed run continues, and its completed epochs. */
  resumedFrom?: { path: string; epoch: number };
  lrSchedule?: engine.LrSchedule;
  earlyStopping?: engine.EarlyStopping;
}

/** A checkpoint written (the engine's full state stays in the file, not in the event). */
export interface CheckpointWritten {
  type: 'checkpoint';
  epoch: number;
  path: string;
}

export type TrainEvent = { type: 'plan'; plan: TrainPlan } | engine.StepEvent | engine.EpochEvent | CheckpointWritten;

export interface TrainOutcome {
  status: engine.TrainStatus;
  /** Why the run stopped early (cancelled, diverged, early stopping); empty when it completed normally. */
  message: string;
  /** Early stopping ended the run (status 'completed'). */
  stoppedEarly: boolean;
  /** With early stopping: the best epoch; with restoreBest the model holds its weights. */
  bestEpoch?: number;
  /** The last checkpoint written, if any. */
  checkpointPath?: string;
  model: Model<Preprocessing>;
  test?: { loss: number; report: ClassificationReport };
  /** The test examples as read (before normalisation) with the model's outputs, for browsing them. */
  testPredictions?: { data: Dataset; predictions: Int32Array; probabilities: Float32Array };
  plan: TrainPlan;
  /** The request that ran: for a resumed run, the one rebuilt from its checkpoint (the run history records it). */
  request: TrainRequest;
}

/**
 * A run that trained but was stopped by a failure around it (a checkpoint that could not be written):
 * the message says why, and `outcome` holds the weights of the last completed step, so a face can keep
 * the model; callers that only catch errors still see a failure.
 */
export class RunStoppedError extends Error {
  constructor(message: string, readonly outcome: TrainOutcome) {
    super(message);
    this.name = 'RunStoppedError';
  }
}

/**
 * Pause, resume and cancel for one run, passed into `trainModel` (a value, not a global flag). Calls made
 * before the engine run exists (while the data loads) are remembered and applied when it starts.
 */
export class TrainingControl {
  private run: engine.TrainingRun | undefined;
  private pausedNow = false;
  private cancelledNow = false;
  private pendingLearningRate: number | undefined;

  get paused(): boolean {
    return this.pausedNow;
  }

  get cancelled(): boolean {
    return this.cancelledNow;
  }

  pause(): void {
    if (this.cancelledNow || this.pausedNow) return;
    this.pausedNow = true;
    this.run?.pause();
  }

  resume(): void {
    if (!this.pausedNow) return;
    this.pausedNow = false;
    this.run?.resume();
  }

  /** Stops within one step; a paused run stops without resuming. */
  cancel(): void {
    if (this.cancelledNow) return;
    this.cancelledNow = true;
    this.pausedNow = false;
    this.run?.cancel();
  }

  /** A new base learning rate from the next step (throws RangeError unless in (0, 1e6]). */
  setLearningRate(lr: number): void {
    if (!(Number.isFinite(lr) && lr > 0 && lr <= 1e6)) throw new RangeError('learning rate must be a number in (0, 1e6]');
    if (this.run) this.run.setLearningRate(lr);
    else this.pendingLearningRate = lr;
  }

  /** Called by trainModel when the engine run starts and ends. */
  attach(run: engine.TrainingRun | undefined): void {
    this.run = run;
    if (!run) return;
    if (this.pendingLearningRate !== undefined) run.setLearningRate(this.pendingLearningRate);
    this.pendingLearningRate = undefined;
    if (this.cancelledNow) run.cancel();
    else if (this.pausedNow) run.pause();
  }
}

export const defaultValSplit = 0.1;
export const defaultTestSplit = 0.2;

function checkFraction(name: string, value: number): void {
  if (!(value >= 0 && value < 1)) throw new Error(`${name} must be at least 0 and below 1, got ${value}`);
}

function isImage(dataset: Dataset): boolean {
  return dataset.featureShape.length === 3;
}

/** The test set a run uses instead of a test share: the one given, or MNIST's test half for MNIST. */
export function separateTestSource(data: DataSource, testData?: DataSource): DataSource | undefined {
  return testData ?? (data.kind === 'mnist' ? { kind: 'mnist', split: 'test' } : undefined);
}

/** What a run would train, validate and test on, before it starts (the Data screen's live counts). */
export interface SplitPlan {
  trainCount: number;
  validationCount: number;
  testCount: number;
  /** The separate test set used instead of a test share (MNIST's test half), as the CLI describes it. */
  separateTest?: string;
}

/**
 * The counts of the same stratified split trainModel makes (counts do not depend on the seed). `test` is a
 * separate test set already open; without it, MNIST's test half is counted for MNIST without loading it.
 */
export function planSplit(
  all: Dataset,
  data: DataSource,
  options: { valSplit?: number; testSplit?: number; test?: { source: DataSource; count: number } } = {},
): SplitPlan {
  const valSplit = options.valSplit ?? defaultValSplit;
  const testSplit = options.testSplit ?? defaultTestSplit;
  checkFraction('valSplit', valSplit);
  checkFraction('testSplit', testSplit);
  const separate = separateTestSource(data, options.test?.source);
  const separateCount = options.test?.count ?? (separate?.kind === 'mnist' ? builtinMnistCounts[separate.split] : undefined);
  const split = stratifiedSplit(all.labels, { validation: valSplit, test: separate ? 0 : testSplit }, 0);
  return {
    trainCount: split.train.length,
    validationCount: split.validation.length,
    testCount: separate ? (separateCount ?? 0) : split.test.length,
    ...(separate ? { separateTest: describeDataSource(separate) } : {}),
  };
}

/** Splits off validation (and test, when there is no test set) by class, reproducibly. */
function splitData(all: Dataset, testSet: Dataset | undefined, valSplit: number, testSplit: number, seed: number) {
  const split = stratifiedSplit(all.labels, { validation: valSplit, test: testSet ? 0 : testSplit }, seed);
  return {
    train: subset(all, split.train),
    validation: split.validation.length > 0 ? subset(all, split.validation) : undefined,
    test: testSet ?? (split.test.length > 0 ? subset(all, split.test) : undefined),
  };
}

function epochRecords(history: engine.EpochStats[]): EpochRecord[] {
  const finite = (value: number | undefined) => (value === undefined ? undefined : Number.isFinite(value) ? value : null);
  return history.map((epoch) => ({
    epoch: epoch.epoch,
    trainLoss: finite(epoch.trainLoss) ?? null,
    trainAccuracy: finite(epoch.trainAccuracy) ?? null,
    validationLoss: finite(epoch.validationLoss),
    validationAccuracy: finite(epoch.validationAccuracy),
    seconds: epoch.seconds,
    learningRate: epoch.learningRate,
  }));
}

/** A request as the run record a checkpoint keeps. */
function runRecordOf(request: TrainRequest, prepared: { epochs: number; batchSize: number; normalize: NormalizationKind; valSplit: number; testSplit: number; seed: number; digest: string; counts: RunRecord['counts'] }): RunRecord {
  return {
    data: request.data,
    ...(request.testData ? { testData: request.testData } : {}),
    normalize: prepared.normalize,
    valSplit: prepared.valSplit,
    testSplit: prepared.testSplit,
    seed: prepared.seed,
    epochs: prepared.epochs,
    batchSize: prepared.batchSize,
    threads: request.threads ?? 0,
    ...(request.lrSchedule ? { lrSchedule: request.lrSchedule } : {}),
    ...(request.earlyStopping ? { earlyStopping: request.earlyStopping } : {}),
    trainDigest: prepared.digest,
    counts: prepared.counts,
  };
}

/**
 * Trains as requested. `signal` cancels (the outcome then has status 'cancelled' and the weights so far);
 * divergence ends with status 'diverged' and the last weights whose loss was finite. `control` adds pause,
 * resume, cancel and a new learning rate for interactive faces. A ResumeRequest continues a checkpoint.
 */
export async function trainModel(
  request: TrainRequest | ResumeRequest,
  onEvent: (event: TrainEvent) => void = () => {},
  signal?: AbortSignal,
  control?: TrainingControl,
): Promise<TrainOutcome> {
  if ('resumeFrom' in request) return resumeModel(request, onEvent, signal, control);
  return runTraining(request, undefined, onEvent, signal, control);
}

async function resumeModel(
  request: ResumeRequest,
  onEvent: (event: TrainEvent) => void,
  signal?: AbortSignal,
  control?: TrainingControl,
): Promise<TrainOutcome> {
  const checkpoint = await loadCheckpoint(request.resumeFrom, { preprocessingSchema });
  const record = parseRunRecord(checkpoint.run, request.resumeFrom);
  const epochs = request.epochs ?? record.epochs;
  if (epochs <= checkpoint.state.epoch) {
    throw new Error(`${request.resumeFrom}: the run has already trained ${checkpoint.state.epoch} of ${epochs} epochs; ask for more epochs`);
  }
  const trainRequest: TrainRequest = {
    data: record.data,
    testData: record.testData,
    model: {},
    normalize: record.normalize,
    epochs,
    batchSize: record.batchSize,
    valSplit: record.valSplit,
    testSplit: record.testSplit,
    seed: record.seed,
    device: request.device,
    threads: request.threads ?? record.threads,
    lrSchedule: record.lrSchedule,
    earlyStopping: record.earlyStopping,
    checkpointPath: request.checkpointPath ?? request.resumeFrom,
  };
  return runTraining(trainRequest, { checkpoint, record, path: request.resumeFrom }, onEvent, signal, control);
}

interface Resumption {
  checkpoint: Checkpoint<Preprocessing>;
  record: RunRecord;
  path: string;
}

async function runTraining(
  request: TrainRequest,
  resumption: Resumption | undefined,
  onEvent: (event: TrainEvent) => void,
  signal?: AbortSignal,
  control?: TrainingControl,
): Promise<TrainOutcome> {
  const seed = request.seed ?? 0;
  const valSplit = request.valSplit ?? defaultValSplit;
  const testSplit = request.testSplit ?? defaultTestSplit;
  checkFraction('--val-split', valSplit);
  checkFraction('--test-split', testSplit);

  const all = await loadDataSource(request.data);
  if (all.count === 0) throw new Error(`${describeDataSource(request.data)}: no examples`);
  const testSource = separateTestSource(request.data, request.testData);
  const testRaw = testSource ? await loadDataSourceFor(testSource, knownData(all)) : undefined;
  const parts = splitData(all, testRaw, valSplit, testSplit, seed);
  if (parts.train.count === 0) throw new Error('no training examples left after the validation and test splits');
  const digest = datasetDigest(parts.train);
  const counts = { train: parts.train.count, validation: parts.validation?.count ?? 0, test: parts.test?.count ?? 0 };

  const classes = all.classLabels.length;
  let spec: ModelSpec;
  let epochs: number;
  let batchSize: number;
  if (resumption) {
    // the same run: the checkpoint's spec, and data that splits into the very same training set
    const { checkpoint, record, path } = resumption;
    if (digest !== record.trainDigest || counts.train !== record.counts.train || counts.validation !== record.counts.validation) {
      throw new Error(
        `${path}: the data of the run (${describeDataSource(request.data)}) has changed since the checkpoint: ` +
          `its training split no longer matches (${counts.train} examples now, ${record.counts.train} then)`,
      );
    }
    if (checkpoint.model.labels.join('\u0000') !== all.classLabels.join('\u0000')) {
      throw new Error(`${path}: the data's classes differ from the checkpoint's`);
    }
    spec = checkpoint.model.spec;
    epochs = request.epochs ?? record.epochs;
    batchSize = record.batchSize;
  } else {
    const built = buildModelSpec({ ...request.model, seed: request.model.seed ?? seed }, all.featureShape, classes);
    spec = built.spec;
    const defaults = defaultTraining(all.featureShape, parts.train.count);
    epochs = request.epochs ?? built.presetTraining?.epochs ?? defaults.epochs;
    batchSize = request.batchSize ?? built.presetTraining?.batchSize ?? defaults.batchSize;
    // A preset's recipe (fast_mnist's one-cycle) applies unless the request chose a schedule.
    const presetSchedule = built.presetTraining?.lrSchedule;
    if (request.lrSchedule === undefined && presetSchedule) request = { ...request, lrSchedule: presetSchedule };
  }
  checkCount(epochs, '--epochs', countLimits.epochs);
  checkCount(batchSize, '--batch-size', countLimits.batchSize);

  const normalize = request.normalize ?? (isImage(all) ? 'none' : 'zscore');
  // a resumed run takes the checkpoint's statistics (the same numbers, fitted on the same split)
  const preprocessing = resumption ? resumption.checkpoint.model.preprocessing : fitNormalization(normalize, parts.train);
  const trainSet = applyNormalization(preprocessing, parts.train);
  const validationSet = parts.validation && applyNormalization(preprocessing, parts.validation);
  const testSet = parts.test && applyNormalization(preprocessing, parts.test);

  const device = engine.resolveDevice(request.device ?? 'auto');
  const plan: TrainPlan = {
    spec,
    device,
    epochs,
    batchSize,
    trainCount: trainSet.count,
    validationCount: validationSet?.count ?? 0,
    testCount: testSet?.count ?? 0,
    classLabels: all.classLabels,
    dataDescription: describeDataSource(request.data),
    ...(resumption ? { resumedFrom: { path: resumption.path, epoch: resumption.checkpoint.state.epoch } } : {}),
    ...(request.lrSchedule ? { lrSchedule: request.lrSchedule } : {}),
    ...(request.earlyStopping ? { earlyStopping: request.earlyStopping } : {}),
  };
  onEvent({ type: 'plan', plan });

  const threads = request.threads ?? 0;
  const options = { epochs, batchSize, seed, device, threads };
  const record = runRecordOf(request, { epochs, batchSize, normalize, valSplit, testSplit: testRaw ? 0 : testSplit, seed, digest, counts });
  const modelOf = (parameters: Float32Array, history: engine.EpochStats[], status: string, seconds: number, deviceName: string): Model<Preprocessing> => ({
    spec,
    parameters,
    labels: all.classLabels,
    featureNames: all.featureNames,
    inputShape: [...spec.input],
    preprocessing,
    training: {
      options: {
        ...options, normalize, valSplit, testSplit: testRaw ? 0 : testSplit, data: plan.dataDescription, status,
        ...(request.lrSchedule ? { lrSchedule: request.lrSchedule } : {}),
        ...(request.earlyStopping ? { earlyStopping: request.earlyStopping } : {}),
      },
      history: epochRecords(history),
      device: deviceName,
      seconds,
    },
  });

  // ---- checkpoints: one write at a time, the newest waiting one next (epochs faster than the disk
  // skip a file, never an epoch's consistency); the first failure stops the run and is thrown ----
  const checkpointPath = request.checkpointPath;
  let writing: Promise<void> = Promise.resolve();
  let waiting: { checkpoint: Checkpoint; epoch: number } | undefined;
  let writeError: Error | undefined;
  let lastCheckpoint: string | undefined;
  const writeWaiting = async (): Promise<void> => {
    const next = waiting;
    waiting = undefined;
    if (!next || writeError || !checkpointPath) return;
    try {
      await saveCheckpoint(checkpointPath, next.checkpoint);
      lastCheckpoint = checkpointPath;
      onEvent({ type: 'checkpoint', epoch: next.epoch, path: checkpointPath });
    } catch (error) {
      writeError = error as Error;
      run?.cancel();
    }
  };
  let run: engine.TrainingRun | undefined;
  const onProgress = (event: engine.TrainProgress) => {
    if (event.type !== 'checkpoint') {
      onEvent(event);
      return;
    }
    if (!checkpointPath || writeError) return;
    const state = event;
    const seconds = state.history.reduce((sum, epoch) => sum + epoch.seconds, 0);
    const checkpoint: Checkpoint = {
      model: modelOf(state.parameters, state.history, 'checkpoint', seconds, device),
      state: {
        epoch: state.epoch, step: state.step, seed: state.seed, learningRate: state.learningRate,
        parameters: state.parameters, optimizerState: state.optimizerState, history: state.history,
        ...(state.bestParameters ? { bestParameters: state.bestParameters } : {}),
      },
      run: record as unknown as Record<string, unknown>,
    };
    const queued = waiting !== undefined;
    waiting = { checkpoint, epoch: state.epoch };
    if (!queued) writing = writing.then(writeWaiting);
  };

  const resume = resumption?.checkpoint.state;
  run = engine.train(spec, trainSet, validationSet, {
    ...options,
    lrSchedule: request.lrSchedule,
    earlyStopping: request.earlyStopping,
    checkpoints: checkpointPath !== undefined,
    ...(resume ? { resume } : {}),
  }, onProgress);
  const cancel = () => run?.cancel();
  signal?.addEventListener('abort', cancel, { once: true });
  if (signal?.aborted) run.cancel();
  control?.attach(run);
  let result: engine.TrainResult;
  try {
    result = await run.promise;
  } finally {
    signal?.removeEventListener('abort', cancel);
    control?.attach(undefined);
    await writing;
  }

  let test: TrainOutcome['test'];
  let testPredictions: TrainOutcome['testPredictions'];
  if (parts.test && testSet && testSet.count > 0) {
    const evaluation = await engine.evaluate(spec, result.parameters, testSet, { device, threads });
    test = { loss: evaluation.loss, report: classificationReport(testSet.labels, evaluation.predictions, classes, all.classLabels) };
    testPredictions = { data: parts.test, predictions: evaluation.predictions, probabilities: evaluation.probabilities };
  }

  const model = modelOf(result.parameters, result.history, result.status, result.seconds, result.device);
  if (test) model.metrics = { test: test.report, testLoss: test.loss };
  if (result.stoppedEarly || result.restoredBest) model.training!.options.bestEpoch = result.bestEpoch;
  const outcome: TrainOutcome = {
    status: result.status,
    message: result.message,
    stoppedEarly: result.stoppedEarly,
    ...(result.bestEpoch > 0 ? { bestEpoch: result.bestEpoch } : {}),
    ...(lastCheckpoint ? { checkpointPath: lastCheckpoint } : {}),
    model,
    test,
    testPredictions,
    plan,
    request,
  };
  if (writeError) {
    const epochs = result.history.length;
    throw new RunStoppedError(
      `${writeError.message}; training stopped after ${epochs} epoch${epochs === 1 ? '' : 's'} (step ${result.steps}), ` +
        'and the model keeps the weights of the last completed step',
      outcome,
    );
  }
  return outcome;
}
