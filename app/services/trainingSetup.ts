// Everything a run needs before its first step, for a new run and for one continued from a checkpoint alike:
// data → split → spec and settings → normalisation → the plan a face shows, the record a checkpoint keeps and
// the model the run's weights become. trainModel (training.ts) drives the engine with it.
import { counted } from '../core/files/messages';
import { classCounts, type Dataset } from '../core/data/dataset';
import { resolveGpus, type GpuChoice } from '../core/model/gpuChoice';
import { effectivePrecision, precisionNotes, type Precision } from '../core/model/precision';
import { applyNormalization, fitNormalization, preprocessingSchema, type NormalizationKind, type Preprocessing } from '../core/data/preprocess';
import { builtinMnistCounts } from '../core/data/mnist';
import { stratificationKeys, stratifiedSplit, subset } from '../core/data/split';
import { fitTargetScaling, scaleTargets } from '../core/data/targetScaling';
import { applyImputation, defaultImputation, fitImputation, type Imputation, type ImputationSettings } from '../core/data/imputation';
import { headOfDataset } from '../core/model/head';
import { loadCheckpoint, type Checkpoint } from '../core/model/checkpointFile';
import { checkCount, countLimits } from '../core/model/countLimits';
import { defaultTraining, defaultValSplit, defaultValSplitFor, isSmallRegressionTable, smallRegressionWeightDecay } from '../core/model/defaults';
import type { EpochRecord, Model } from '../core/model/modelFile';
import type { ModelSpec } from '../core/model/spec';
import type { SplitPlan, TrainPlan } from '../core/model/trainingTypes';
import * as engine from '../engine';
import { describeDataSource, idxTestSource, knownData, loadDataSource, loadDataSourceFor, type DataSource, type KnownData } from './dataSources';
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
  /** Train on this share of the training split (a stratified, seeded subset; default 1): a search's screening rungs. */
  trainShare?: number;
  seed?: number;
  device?: engine.DeviceChoice;
  threads?: number;
  /** Default constant. */
  lrSchedule?: engine.LrSchedule;
  earlyStopping?: engine.EarlyStopping;
  /** How missing cells are filled, fitted on the training split (default: iterative, no indicator). */
  imputation?: ImputationSettings;
  /** Classification: weigh each class's examples in the loss ('balanced': n / (classes * n_class), like scikit-learn). */
  classWeights?: ClassWeights;
  /** Images: random shifts, flips, rotations, scaling and erasing of each training batch, on the training device. */
  augment?: engine.Augmentation;
  /** A weight average (EMA) with this decay, used for validation and kept as the model. */
  ema?: number;
  /** CUDA: the GPUs to train on; several train data-parallel (docs/ARCHITECTURE.md "Several GPUs"). */
  gpus?: GpuChoice;
  /** CUDA: the tensor-core products' arithmetic (core/model/precision.ts; default mixed, the CPU FP32). */
  precision?: Precision;
  /** Write a checkpoint here (atomically) after every epoch. */
  checkpointPath?: string;
}

/**
 * Continue the run of a checkpoint: its data, split, normalisation, spec, seed, batch size, schedule and
 * early stopping; `epochs` is the new total (default: the run's), device (default: resumeDevice) and threads
 * may change (the CPU gives the same bits with the same thread count). The CLI's `--resume` keeps writing to `resumeFrom`; the
 * UI's `training:continue` gives the new run a checkpoint file of its own.
 */
export interface ResumeRequest {
  resumeFrom: string;
  epochs?: number;
  device?: engine.DeviceChoice;
  threads?: number;
  /** Default: the GPUs the run trained on (a different count changes the steps of an epoch: refused). */
  gpus?: GpuChoice;
  /** Default: keep writing to `resumeFrom`. */
  checkpointPath?: string;
}

/** 'balanced' or one positive weight per class, in the classes' order. */
export type ClassWeights = 'balanced' | number[];

export { defaultValSplit };
export const defaultTestSplit = 0.2;

// ---- splits ----

function checkFraction(name: string, value: number): void {
  if (!(value >= 0 && value < 1)) throw new Error(`${name} must be at least 0 and below 1, got ${value}`);
}

/**
 * The test set a run uses instead of a test share: the one given, MNIST's test half for MNIST, or an IDX
 * source's own test pair. It is read with the training data's classes (names included: knownData).
 */
export function separateTestSource(data: DataSource, testData?: DataSource): DataSource | undefined {
  return testData ?? (data.kind === 'mnist' ? { kind: 'mnist', split: 'test' } : idxTestSource(data));
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
  const valSplit = options.valSplit ?? defaultValSplitFor(all);
  const testSplit = options.testSplit ?? defaultTestSplit;
  checkFraction('valSplit', valSplit);
  checkFraction('testSplit', testSplit);
  const separate = separateTestSource(data, options.test?.source);
  const separateCount = options.test?.count ?? (separate?.kind === 'mnist' ? builtinMnistCounts[separate.split] : undefined);
  const split = stratifiedSplit(stratificationKeys(all), { validation: valSplit, test: separate ? 0 : testSplit }, 0);
  return {
    trainCount: split.train.length,
    validationCount: split.validation.length,
    testCount: separate ? (separateCount ?? 0) : split.test.length,
    ...(separate ? { separateTest: describeDataSource(separate) } : {}),
  };
}

/** The data as read, split off into validation (and test, when there is no test set) by class, reproducibly. */
interface LoadedData {
  all: Dataset;
  train: Dataset;
  validation?: Dataset;
  test?: Dataset;
  /** A separate test set was read (the test share is then 0). */
  separateTest: boolean;
  digest: string;
  counts: RunRecord['counts'];
  /** How missing cells were filled (CSV tables). */
  imputation?: Imputation;
  /** The validation share used: the one asked for, else the data's default. */
  valSplit: number;
}

/** How a run reads its data: from its files (the default), or from a cache that a search keeps for its trials. */
export interface DataReader {
  load(source: DataSource): Promise<Dataset>;
  loadFor(source: DataSource, known: KnownData): Promise<Dataset>;
  /**
   * A search's trials share their splits and normalised sets: the same key (the data, the shares, the seed, the
   * normalisation) gives the same result, computed once (datasets are never changed in place).
   */
  memo?<T>(key: string, compute: () => Promise<T>): Promise<T>;
}

function memoized<T>(reader: DataReader, key: unknown, compute: () => Promise<T>): Promise<T> {
  return reader.memo ? reader.memo(JSON.stringify(key), compute) : compute();
}

export const fileReader: DataReader = { load: loadDataSource, loadFor: (source, known) => loadDataSourceFor(source, known) };

async function loadSplitData(
  request: TrainRequest, askedValSplit: number | undefined, testSplit: number, seed: number, fitted: Imputation | undefined, reader: DataReader,
): Promise<LoadedData> {
  const read = await reader.load(request.data);
  if (read.count === 0) throw new Error(`${describeDataSource(request.data)}: no examples`);
  const valSplit = askedValSplit ?? defaultValSplitFor(read);
  const testSource = separateTestSource(request.data, request.testData);
  const readTest = testSource ? await reader.loadFor(testSource, knownData(read)) : undefined;
  const split = stratifiedSplit(stratificationKeys(read), { validation: valSplit, test: readTest ? 0 : testSplit }, seed);
  // Missing cells are filled as the training split says (a continued run keeps its checkpoint's values).
  const imputation = fitted ?? (imputes(read) ? fitImputation(read, split.train, request.imputation ?? defaultImputation) : undefined);
  const all = imputation ? applyImputation(imputation, read) : read;
  const testSet = imputation && readTest ? applyImputation(imputation, readTest) : readTest;
  const train = subset(all, split.train);
  if (train.count === 0) throw new Error('no training examples left after the validation and test splits');
  const validation = split.validation.length > 0 ? subset(all, split.validation) : undefined;
  const test = testSet ?? (split.test.length > 0 ? subset(all, split.test) : undefined);
  const counts = { train: train.count, validation: validation?.count ?? 0, test: test?.count ?? 0 };
  return { all, train, validation, test, separateTest: testSet !== undefined, digest: datasetDigest(train), counts, imputation, valSplit };
}

/** Tables read from a CSV get an imputation (fitted even without a missing cell: a later file may have one). */
function imputes(dataset: Dataset): boolean {
  return dataset.encoding !== undefined && dataset.featureShape.length === 1;
}

// ---- a run from a checkpoint ----

/** A checkpoint being continued: its state, the record of its run and where it was read. */
export interface Resumption {
  checkpoint: Checkpoint<Preprocessing>;
  record: RunRecord;
  path: string;
}

/**
 * Where a resume runs when it names no device: a CPU run stays on the CPU (on a machine with a GPU, 'auto'
 * would move it there and the continued run would no longer give the uninterrupted run's bits); a GPU run,
 * or one recorded before runs kept their device, takes the GPU where there is one.
 */
export function resumeDevice(record: RunRecord): engine.DeviceChoice {
  return record.device === 'cpu' ? 'cpu' : 'auto';
}

/** A ResumeRequest as the TrainRequest of the checkpoint's run, with the checkpoint to continue. */
async function requestFromCheckpoint(request: ResumeRequest): Promise<{ request: TrainRequest; resumption: Resumption }> {
  const checkpoint = await loadCheckpoint(request.resumeFrom, { preprocessingSchema });
  const record = parseRunRecord(checkpoint.run, request.resumeFrom);
  const epochs = request.epochs ?? record.epochs;
  if (epochs <= checkpoint.state.epoch) {
    throw new Error(`${request.resumeFrom}: the run has already trained ${checkpoint.state.epoch} of ${counted(epochs, 'epoch')}; ask for more epochs`);
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
    device: request.device ?? resumeDevice(record),
    threads: request.threads ?? record.threads,
    lrSchedule: record.lrSchedule,
    earlyStopping: record.earlyStopping,
    classWeights: record.classWeights,
    ...(record.augment ? { augment: record.augment } : {}),
    ...(record.ema !== undefined ? { ema: record.ema } : {}),
    ...(record.trainShare !== undefined ? { trainShare: record.trainShare } : {}),
    // what the run computed with (checkpoints from before precisions existed trained in FP32)
    precision: record.precision ?? 'fp32',
    ...(request.gpus ? { gpus: request.gpus } : record.gpus ? { gpus: { kind: 'list' as const, gpus: record.gpus } } : {}),
    checkpointPath: request.checkpointPath ?? request.resumeFrom,
  };
  return { request: trainRequest, resumption: { checkpoint, record, path: request.resumeFrom } };
}

/** The same run: data that splits into the very same training set, and the checkpoint's classes. */
function checkSameRun(data: LoadedData, source: DataSource, { checkpoint, record, path }: Resumption): void {
  const { digest, counts } = data;
  if (digest !== record.trainDigest || counts.train !== record.counts.train || counts.validation !== record.counts.validation) {
    throw new Error(
      `${path}: the data of the run (${describeDataSource(source)}) has changed since the checkpoint: ` +
        `its training split no longer matches (${counts.train} examples now, ${record.counts.train} then)`,
    );
  }
  if (checkpoint.model.labels.join('\u0000') !== data.all.classLabels.join('\u0000')) {
    throw new Error(`${path}: the data's classes differ from the checkpoint's`);
  }
  const targets = checkpoint.model.preprocessing.target?.names ?? [];
  if (targets.join('\u0000') !== (data.all.targetNames ?? []).join('\u0000')) {
    throw new Error(`${path}: the data's target columns differ from the checkpoint's`);
  }
}

// ---- the run's settings ----

interface RunSettings {
  spec: ModelSpec;
  epochs: number;
  batchSize: number;
  /** The request with a preset's schedule filled in. */
  request: TrainRequest;
}

/** The checkpoint's spec and batch size, or the request's model built for the data with its defaults. */
function runSettings(request: TrainRequest, data: LoadedData, seed: number, resumption: Resumption | undefined): RunSettings {
  if (resumption) {
    checkSameRun(data, request.data, resumption);
    const { checkpoint, record } = resumption;
    return { spec: checkpoint.model.spec, epochs: request.epochs ?? record.epochs, batchSize: record.batchSize, request };
  }
  const { all, train } = data;
  const built = buildModelSpec({ ...request.model, seed: request.model.seed ?? seed }, all.featureShape, headOfDataset(all));
  const defaults = defaultTraining(all.featureShape, train.count);
  const epochs = request.epochs ?? built.presetTraining?.epochs ?? defaults.epochs;
  const batchSize = request.batchSize ?? built.presetTraining?.batchSize ?? defaults.batchSize;
  // A preset's recipe (fast_mnist's one-cycle, the ResNets' augmentation) applies unless the request chose
  // its own schedule or augmentation.
  const presetSchedule = built.presetTraining?.lrSchedule;
  const presetAugment = built.presetTraining?.augment;
  const withSchedule = request.lrSchedule === undefined && presetSchedule ? { ...request, lrSchedule: presetSchedule } : request;
  const withRecipe = withSchedule.augment === undefined && presetAugment && all.featureShape.length === 3
    ? { ...withSchedule, augment: presetAugment }
    : withSchedule;
  return { spec: built.spec, epochs, batchSize, request: withRecipe };
}

/** What a small regression table's defaults changed, said aloud (only what the user did not choose). */
function smallTableNotes(all: Dataset, given: TrainRequest, spec: ModelSpec): string[] {
  if (!isSmallRegressionTable(all.task, all.count, all.featureShape)) return [];
  const chosen = [
    ...(given.model.weightDecay === undefined && spec.optimizer.weightDecay === smallRegressionWeightDecay ? [`weight decay ${smallRegressionWeightDecay}`] : []),
    ...(given.valSplit === undefined ? ['no validation share'] : []),
  ];
  if (chosen.length === 0) return [];
  return [`a small regression table (${all.count} rows): ${chosen.join(' and ')} by default, against over-fitting (--weight-decay, --val-split to change)`];
}

/** Below this many steps an epoch, batchnorm's running statistics (momentum 0.1: about the last 10 steps) trail the weights for a large part of an epoch. */
const batchnormLagSteps = 50;

/** Whether any layer, or a layer of a residual block, is a batchnorm. */
function hasBatchnorm(spec: ModelSpec): boolean {
  return spec.layers.some((layer) => layer.kind === 'batchnorm' || (layer.kind === 'residual' && layer.layers.some((inner) => inner.kind === 'batchnorm')));
}

/**
 * Few steps an epoch with batchnorm: validation and the saved model use running statistics that trail the
 * weights while they change fast, so early epochs can validate far below training (a constant class at
 * first). Said up front, with what helps, so that a low validation accuracy is not read as a broken run.
 */
export function batchnormLagNotes(spec: ModelSpec, trainCount: number, batchSize: number): string[] {
  const steps = Math.ceil(trainCount / Math.max(1, batchSize));
  if (!hasBatchnorm(spec) || steps >= batchnormLagSteps) return [];
  const stepWords = `${steps} step${steps === 1 ? '' : 's'}`;
  return [`batchnorm with only ${stepWords} an epoch: its running statistics, used for validation and the saved model, trail the weights, so validation can stay far below training in the first epochs; more epochs or a smaller batch size help`];
}

/** The plan's notes: the small-table defaults, batchnorm with few steps, and what an image folder's reading chose and skipped. */
function planNotes(notes: string[]): { notes?: string[] } {
  return notes.length > 0 ? { notes } : {};
}

// ---- the prepared run ----

/** A run ready for the engine. */
export interface PreparedRun {
  /** The request as it runs: for a continued run, rebuilt from its checkpoint (the run history records it). */
  request: TrainRequest;
  plan: TrainPlan;
  spec: ModelSpec;
  data: LoadedData;
  preprocessing: Preprocessing;
  /** Normalised as the engine takes them. */
  sets: { train: Dataset; validation?: Dataset; test?: Dataset };
  engineOptions: engine.TrainOptions & { device: engine.DeviceKind; threads: number };
  /** What a checkpoint of this run keeps about it. */
  record: RunRecord;
  /** The options a model file records (epochs, batchSize, seed, normalize, splits, data), its status between them and ... */
  recordedOptions: Record<string, unknown>;
  /** ... the schedule and early stopping, when the run has them. */
  scheduleOptions: Record<string, unknown>;
  resumption?: Resumption;
}

/** Loads and splits the data, builds the spec and settings (or takes them from the checkpoint), normalises. */
export async function prepareRun(asked: TrainRequest | ResumeRequest, reader: DataReader = fileReader): Promise<PreparedRun> {
  const { request: given, resumption } = 'resumeFrom' in asked ? await requestFromCheckpoint(asked) : { request: asked, resumption: undefined };
  const seed = given.seed ?? 0;
  const testSplit = given.testSplit ?? defaultTestSplit;
  if (given.valSplit !== undefined) checkFraction('--val-split', given.valSplit);
  checkFraction('--test-split', testSplit);
  if (given.trainShare !== undefined && !(given.trainShare > 0 && given.trainShare <= 1)) throw new Error(`the share of the training split must be in (0, 1], got ${given.trainShare}`);
  const fitted = resumption?.checkpoint.model.preprocessing.imputation;
  const splitKey = { split: [given.data, given.testData ?? null, given.valSplit ?? null, testSplit, seed, given.imputation ?? null, fitted ?? null] };
  const data = await memoized(reader, splitKey, () => loadSplitData(given, given.valSplit, testSplit, seed, fitted, reader));
  const { valSplit } = data;
  const { spec, epochs, batchSize, request } = runSettings(given, data, seed, resumption);
  checkCount(epochs, '--epochs', countLimits.epochs);
  checkCount(batchSize, '--batch-size', countLimits.batchSize);

  const normalize = request.normalize ?? (data.all.featureShape.length === 3 ? 'none' : 'zscore');
  // a continued run takes the checkpoint's statistics (the same numbers, fitted on the same split)
  const preprocessing = resumption ? resumption.checkpoint.model.preprocessing : fitPreprocessing(normalize, data.train, data.imputation);
  const fullSets = await memoized(reader, { sets: splitKey, preprocessing }, async () => ({
    train: engineSet(preprocessing, data.train),
    validation: data.validation && engineSet(preprocessing, data.validation),
    test: data.test && engineSet(preprocessing, data.test),
  }));
  const share = request.trainShare ?? 1;
  const sets = share >= 1 ? fullSets
    : await memoized(reader, { share, sets: splitKey, preprocessing }, async () => ({ ...fullSets, train: shareOf(fullSets.train, share, seed) }));
  const device = engine.resolveDevice(request.device ?? 'auto');
  const precision = effectivePrecision(request.precision, device);
  const plan: TrainPlan = {
    spec, device, precision, epochs, batchSize,
    trainCount: sets.train.count,
    validationCount: sets.validation?.count ?? 0,
    testCount: sets.test?.count ?? 0,
    classLabels: data.all.classLabels,
    ...(data.all.task === 'regression' ? { task: 'regression' as const, targetNames: data.all.targetNames ?? ['target'] } : {}),
    dataDescription: describeDataSource(request.data),
    ...(resumption ? { resumedFrom: { epoch: resumption.checkpoint.state.epoch } } : {}),
    ...planNotes([
      ...(resumption ? [] : smallTableNotes(data.all, given, spec)),
      ...batchnormLagNotes(spec, sets.train.count, batchSize),
      ...precisionNotes(request.precision, device, device === 'cuda' ? trainingGpu(request.gpus) : undefined),
      ...(request.data.kind === 'folder' ? data.all.notes ?? [] : []),
    ]),
    ...(request.lrSchedule ? { lrSchedule: request.lrSchedule } : {}),
    ...(request.earlyStopping ? { earlyStopping: request.earlyStopping } : {}),
  };
  const threads = request.threads ?? 0;
  const effectiveTestSplit = data.separateTest ? 0 : testSplit;
  const engineOptions = { epochs, batchSize, seed, device, threads, precision };
  const targetScaling = preprocessing.target ? { targetMean: preprocessing.target.mean, targetStd: preprocessing.target.std } : {};
  const weights = request.classWeights !== undefined ? { classWeights: classWeightsFor(request.classWeights, data.train) } : {};
  const schedules = {
    ...(request.lrSchedule ? { lrSchedule: request.lrSchedule } : {}),
    ...(request.earlyStopping ? { earlyStopping: request.earlyStopping } : {}),
    ...(request.augment ? { augment: request.augment } : {}),
    ...(request.ema !== undefined ? { ema: request.ema } : {}),
  };
  if (request.augment && data.all.featureShape.length !== 3) throw Object.assign(new Error('augmentation applies to images; this data has flat rows'), { field: 'augment' });
  const recipe = {
    ...(request.augment ? { augment: request.augment } : {}),
    ...(request.ema !== undefined ? { ema: request.ema } : {}),
    ...(request.gpus ? { gpus: gpusFor(request.gpus, device) } : {}),
  };
  return {
    request, plan, spec, data, preprocessing, sets, resumption,
    engineOptions: { ...engineOptions, ...targetScaling, ...weights, ...recipe, lrSchedule: request.lrSchedule, earlyStopping: request.earlyStopping },
    record: runRecordOf(request, { epochs, batchSize, normalize, valSplit, testSplit: effectiveTestSplit, seed, device, precision: engineOptions.precision, digest: data.digest, counts: data.counts, ...(recipe.gpus && recipe.gpus.length > 1 ? { gpus: recipe.gpus } : {}) }),
    recordedOptions: { ...engineOptions, normalize, valSplit, testSplit: effectiveTestSplit, ...(share < 1 ? { trainShare: share } : {}), data: plan.dataDescription },
    scheduleOptions: schedules,
  };
}

/** A stratified, seeded `share` of a training set (every class keeps an example: stratifiedSplit). */
function shareOf(train: Dataset, share: number, seed: number): Dataset {
  return subset(train, stratifiedSplit(stratificationKeys(train), { validation: 1 - share, test: 0 }, seed).train);
}

/** Per-class loss weights for the engine: balanced from the training split's counts, or as given. */
export function classWeightsFor(choice: ClassWeights, train: Dataset): number[] {
  const classes = train.classLabels.length;
  if (train.task === 'regression' || classes === 0) throw new Error('class weights apply to classification only');
  if (choice !== 'balanced') {
    if (choice.length !== classes) throw new Error(`--class-weight: ${choice.length} weight(s) for ${classes} classes (${train.classLabels.join(', ')})`);
    return [...choice];
  }
  const counts = classCounts(train);
  // a class missing from the training split gets weight 1: it contributes no loss anyway
  return counts.map((count) => (count > 0 ? train.count / (classes * count) : 1));
}

/** Feature normalisation and, for regression, the target scaling, both fitted on the training split. */
function fitPreprocessing(normalize: NormalizationKind, train: Dataset, imputation: Imputation | undefined): Preprocessing {
  const preprocessing = {
    ...fitNormalization(normalize, train),
    ...(imputation ? { imputation } : {}),
    // named classes: the files' own labels, so the model reads another IDX file by them
    ...(train.labelValues ? { labelValues: [...train.labelValues] } : {}),
  };
  return train.task === 'regression' ? { ...preprocessing, target: fitTargetScaling(train) } : preprocessing;
}

/** A split as the engine takes it: features normalised, regression targets standardised. */
function engineSet(preprocessing: Preprocessing, dataset: Dataset): Dataset {
  const normalized = applyNormalization(preprocessing, dataset);
  if (preprocessing.target === undefined || dataset.targets === undefined) return normalized;
  return { ...normalized, targets: scaleTargets(preprocessing.target, dataset.targets) };
}

/** A request as the run record a checkpoint keeps. */
function runRecordOf(request: TrainRequest, prepared: Omit<RunRecord, 'data' | 'testData' | 'threads' | 'lrSchedule' | 'earlyStopping' | 'classWeights' | 'augment' | 'ema' | 'trainDigest'> & { digest: string }): RunRecord {
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
    device: prepared.device,
    ...(request.lrSchedule ? { lrSchedule: request.lrSchedule } : {}),
    ...(request.earlyStopping ? { earlyStopping: request.earlyStopping } : {}),
    ...(request.classWeights ? { classWeights: request.classWeights } : {}),
    ...(request.augment ? { augment: request.augment } : {}),
    ...(request.ema !== undefined ? { ema: request.ema } : {}),
    ...(prepared.gpus ? { gpus: [...prepared.gpus] } : {}),
    ...(request.trainShare !== undefined && request.trainShare < 1 ? { trainShare: request.trainShare } : {}),
    precision: prepared.precision,
    trainDigest: prepared.digest,
    counts: prepared.counts,
  };
}

// ---- the model a run's weights make ----

const regressionFields = ['trainR2', 'validationR2', 'validationMae', 'validationRmse', 'validationMape'] as const;

function epochRecords(history: engine.EpochStats[]): EpochRecord[] {
  const finite = (value: number | undefined) => (value === undefined ? undefined : Number.isFinite(value) ? value : null);
  return history.map((epoch) => {
    const record: EpochRecord = {
      epoch: epoch.epoch,
      trainLoss: finite(epoch.trainLoss) ?? null,
      trainAccuracy: finite(epoch.trainAccuracy) ?? null,
      validationLoss: finite(epoch.validationLoss),
      validationAccuracy: finite(epoch.validationAccuracy),
      seconds: epoch.seconds,
      learningRate: epoch.learningRate,
    };
    for (const field of regressionFields) if (epoch[field] !== undefined) record[field] = finite(epoch[field]);
    return record;
  });
}

/** The run's model with these weights, its history so far and where it trained; `extraOptions` end its options. */
export function modelOf(
  run: PreparedRun,
  weights: { parameters: Float32Array; history: engine.EpochStats[]; status: string; seconds: number; device: string },
  extraOptions: Record<string, unknown> = {},
): Model<Preprocessing> {
  const { spec, data } = run;
  return {
    spec,
    parameters: weights.parameters,
    labels: data.all.classLabels,
    featureNames: data.all.featureNames,
    inputShape: [...spec.input],
    preprocessing: run.preprocessing,
    training: {
      options: { ...run.recordedOptions, status: weights.status, ...run.scheduleOptions, ...extraOptions },
      history: epochRecords(weights.history),
      device: weights.device,
      seconds: weights.seconds,
    },
  };
}

/** The GPU a CUDA run trains on (the first chosen; else GPU 0), as the engine lists it. */
function trainingGpu(choice: GpuChoice | undefined): engine.DeviceInfo | undefined {
  const cudaDevices = engine.listDevices().filter((info) => info.kind === 'cuda');
  const first = choice ? gpusFor(choice, 'cuda')[0] : 0;
  return cudaDevices.find((info) => info.index === first);
}

/** The chosen GPUs of this machine for a run on `deviceChoice` (checked before a run starts, so faces answer at once). */
export function runGpus(choice: GpuChoice, deviceChoice: engine.DeviceChoice | undefined): number[] {
  return gpusFor(choice, engine.resolveDevice(deviceChoice ?? 'auto'));
}

/** The chosen GPUs of this machine; they need the CUDA device. */
function gpusFor(choice: GpuChoice, device: engine.DeviceKind): number[] {
  if (device !== 'cuda') throw Object.assign(new Error('several GPUs need the CUDA device (--device cuda); this run trains on the CPU'), { field: 'gpus' });
  return resolveGpus(choice, engine.listDevices().filter((info) => info.kind === 'cuda').map((info) => info.index));
}
