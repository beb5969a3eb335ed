// The training service: data → split → normalisation → spec → engine run → test metrics → a Model ready
// to save. The CLI, `serve` and the desktop window all train through `trainModel`.
import type { Dataset } from '../core/data/dataset';
import { applyNormalization, fitNormalization, type NormalizationKind, type Preprocessing } from '../core/data/preprocess';
import { builtinMnistCounts } from '../core/data/mnist';
import { stratifiedSplit, subset } from '../core/data/split';
import { classificationReport, type ClassificationReport } from '../core/metrics/classification';
import { defaultTraining } from '../core/model/defaults';
import type { EpochRecord, Model } from '../core/model/modelFile';
import type { ModelSpec } from '../core/model/spec';
import * as engine from '../engine';
import { describeDataSource, knownData, loadDataSource, loadDataSourceFor, type DataSource } from './dataSources';
import { buildModelSpec, type ModelChoice } from './modelSpecs';

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
}

export type TrainEvent = { type: 'plan'; plan: TrainPlan } | engine.TrainProgress;

export interface TrainOutcome {
  status: engine.TrainStatus;
  /** Why the run stopped early (cancelled, diverged); empty when it completed. */
  message: string;
  model: Model<Preprocessing>;
  test?: { loss: number; report: ClassificationReport };
  /** The test examples as read (before normalisation) with the model's outputs, for browsing them. */
  testPredictions?: { data: Dataset; predictions: Int32Array; probabilities: Float32Array };
  plan: TrainPlan;
}

/**
 * Pause, resume and cancel for one run, passed into `trainModel` (a value, not a global flag). Calls made
 * before the engine run exists (while the data loads) are remembered and applied when it starts.
 */
export class TrainingControl {
  private run: engine.TrainingRun | undefined;
  private pausedNow = false;
  private cancelledNow = false;

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

  /** Called by trainModel when the engine run starts and ends. */
  attach(run: engine.TrainingRun | undefined): void {
    this.run = run;
    if (!run) return;
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
  }));
}

/**
 * Trains as requested. `signal` cancels (the outcome then has status 'cancelled' and the weights so far);
 * divergence ends with status 'diverged' and the last weights whose loss was finite. `control` adds pause and
 * resume (and cancel) for interactive faces.
 */
export async function trainModel(
  request: TrainRequest,
  onEvent: (event: TrainEvent) => void = () => {},
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

  const classes = all.classLabels.length;
  const built = buildModelSpec({ ...request.model, seed: request.model.seed ?? seed }, all.featureShape, classes);
  const defaults = defaultTraining(all.featureShape, parts.train.count);
  const epochs = request.epochs ?? built.presetTraining?.epochs ?? defaults.epochs;
  const batchSize = request.batchSize ?? built.presetTraining?.batchSize ?? defaults.batchSize;
  if (!Number.isInteger(epochs) || epochs < 1) throw new Error(`--epochs must be a positive integer, got ${epochs}`);
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new Error(`--batch-size must be a positive integer, got ${batchSize}`);

  const normalize = request.normalize ?? (isImage(all) ? 'none' : 'zscore');
  const preprocessing = fitNormalization(normalize, parts.train);
  const trainSet = applyNormalization(preprocessing, parts.train);
  const validationSet = parts.validation && applyNormalization(preprocessing, parts.validation);
  const testSet = parts.test && applyNormalization(preprocessing, parts.test);

  const device = engine.resolveDevice(request.device ?? 'auto');
  const plan: TrainPlan = {
    spec: built.spec,
    device,
    epochs,
    batchSize,
    trainCount: trainSet.count,
    validationCount: validationSet?.count ?? 0,
    testCount: testSet?.count ?? 0,
    classLabels: all.classLabels,
    dataDescription: describeDataSource(request.data),
  };
  onEvent({ type: 'plan', plan });

  const options = { epochs, batchSize, seed, device, threads: request.threads ?? 0 };
  const run = engine.train(built.spec, trainSet, validationSet, options, onEvent);
  const cancel = () => run.cancel();
  signal?.addEventListener('abort', cancel, { once: true });
  if (signal?.aborted) run.cancel();
  control?.attach(run);
  let result: engine.TrainResult;
  try {
    result = await run.promise;
  } finally {
    signal?.removeEventListener('abort', cancel);
    control?.attach(undefined);
  }

  let test: TrainOutcome['test'];
  let testPredictions: TrainOutcome['testPredictions'];
  if (parts.test && testSet && testSet.count > 0) {
    const evaluation = await engine.evaluate(built.spec, result.parameters, testSet, { device, threads: request.threads ?? 0 });
    test = { loss: evaluation.loss, report: classificationReport(testSet.labels, evaluation.predictions, classes, all.classLabels) };
    testPredictions = { data: parts.test, predictions: evaluation.predictions, probabilities: evaluation.probabilities };
  }

  const model: Model<Preprocessing> = {
    spec: built.spec,
    parameters: result.parameters,
    labels: all.classLabels,
    featureNames: all.featureNames,
    inputShape: [...built.spec.input],
    preprocessing,
    training: {
      options: { ...options, normalize, valSplit, testSplit: testRaw ? 0 : testSplit, data: plan.dataDescription, status: result.status },
      history: epochRecords(result.history),
      device: result.device,
      seconds: result.seconds,
    },
    metrics: test ? { test: test.report, testLoss: test.loss } : undefined,
  };
  return { status: result.status, message: result.message, model, test, testPredictions, plan };
}
