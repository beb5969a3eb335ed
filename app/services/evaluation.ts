// Evaluating and using a trained model on new data: metrics for labelled files, predictions with class
// probabilities for any file. The model's stored preprocessing is applied, so a model trained on the
// built-in MNIST reads a Kaggle-style pixel CSV of the same images the same way.
import { scanImageFolder } from '../core/data/imageFolder';
import { imageFolderRoot } from './zipImages';
import type { Dataset } from '../core/data/dataset';
import { applyPreprocessing, normalizeFeatures, type Preprocessing } from '../core/data/preprocess';
import { applyImputation } from '../core/data/imputation';
import { classificationReport, emptyClassificationReport, type ClassificationReport } from '../core/metrics/classification';
import { regressionReport, residualHistogram, worstPredictions, type Histogram, type RegressionReport, type WorstPrediction } from '../core/metrics/regression';
import { scaleTargets, unscaleOutputs, type TargetScaling } from '../core/data/targetScaling';
import type { Model } from '../core/model/modelFile';
import * as engine from '../engine';
import { describeDataSource, loadDataSourceFor, type DataSource, type KnownData } from './dataSources';

export interface EvaluateOptions {
  device?: engine.DeviceChoice;
  batchSize?: number;
  threads?: number;
  /** Test-time augmentation (images): the input and its shifts averaged; with the flip when the run flipped. */
  tta?: boolean;
  ttaFlip?: boolean;
}

/** Test-time augmentation for a model: the shifted views always, the mirror image only when its run flipped. */
export function ttaFor(model: { training?: { options?: Record<string, unknown> } }): { tta: true; ttaFlip?: true } {
  const augment = model.training?.options?.augment as { flip?: boolean } | undefined;
  return { tta: true, ...(augment?.flip ? { ttaFlip: true } : {}) };
}

/** A regression model's evaluation, in the targets' original units. */
export interface RegressionEvaluation {
  report: RegressionReport;
  targetNames: string[];
  /** (count, targets) row-major. */
  predicted: Float64Array;
  truth: Float32Array;
  /** Residuals (predicted − true) of the first target. */
  residuals: Histogram;
  /** The rows with the largest absolute error in the first target. */
  worst: WorstPrediction[];
}

export interface Evaluation {
  loss: number;
  /** Classification metrics; for a regression model an empty report (no classes) and `regression` holds the metrics. */
  report: ClassificationReport;
  regression?: RegressionEvaluation;
  predictions: Int32Array;
  /** (count, classes) row-major. */
  probabilities: Float32Array;
  dataset: Dataset;
  /** The data as read, before the model's normalisation (for showing examples as the user knows them). */
  rawDataset: Dataset;
}

export interface Prediction {
  /** Class names; empty for a regression model. */
  labels: string[];
  /** Regression: the predicted values (count, targets) in the original units, and the target names. */
  values?: Float64Array;
  targetNames?: string[];
  predictions: Int32Array;
  probabilities: Float32Array;
  /** True labels where the file had them (-1 otherwise). */
  truth: Int32Array;
  dataset: Dataset;
}

/** Values per example as a file holds them: the model's input, less the missing-indicator features imputation appends. */
export function rawInputWidth(model: Model<Preprocessing>): number {
  const imputation = model.preprocessing.imputation;
  return imputation ? imputation.fill.length : model.spec.input.reduce((a, b) => a * b, 1);
}

/** What a model remembers about the data it was trained on. */
export function knownDataOf(model: Model<Preprocessing>): KnownData {
  const shape = model.preprocessing.imageShape ?? (model.inputShape.length === 3 ? model.inputShape : undefined);
  const labelValues = model.preprocessing.labelValues;
  if (labelValues && labelValues.length !== model.labels.length) {
    throw new Error(`the model file is damaged: ${labelValues.length} label values for ${model.labels.length} classes`);
  }
  return {
    classLabels: model.labels,
    encoding: model.preprocessing.encoding,
    imageShape: shape ? [shape[0], shape[1], shape[2]] : undefined,
    pixelScale: model.preprocessing.pixelScale,
    ...(labelValues ? { labelValues } : {}),
  };
}

/** Reads `source` the way the model's training data was read, then applies its normalisation. */
async function prepare(model: Model<Preprocessing>, source: DataSource, unlabeled: boolean): Promise<Dataset> {
  return (await prepareWithRaw(model, source, unlabeled)).dataset;
}

async function prepareWithRaw(model: Model<Preprocessing>, source: DataSource, unlabeled: boolean): Promise<{ dataset: Dataset; raw: Dataset }> {
  const raw = await loadDataSourceFor(source, knownDataOf(model), { unlabeled });
  const expected = rawInputWidth(model);
  const got = raw.featureShape.reduce((a, b) => a * b, 1);
  if (got !== expected) {
    throw new Error(`${describeDataSource(source)}: ${got} features per example, but the model takes ${expected} (${model.spec.input.join('x')})`);
  }
  const normalized = applyPreprocessing(model.preprocessing, raw);
  return { dataset: { ...normalized, featureShape: [...model.spec.input] }, raw };
}

export async function evaluateModel(model: Model<Preprocessing>, source: DataSource, options: EvaluateOptions = {}): Promise<Evaluation> {
  const { dataset, raw } = await prepareWithRaw(model, source, false);
  if (dataset.count === 0) throw new Error(`${describeDataSource(source)}: no examples to evaluate`);
  if (model.preprocessing.target !== undefined) return evaluateRegression(model, dataset, raw, options);
  const result = await engine.evaluate(model.spec, model.parameters, dataset, options);
  const report = classificationReport(dataset.labels, result.predictions, model.labels.length, model.labels);
  return { loss: result.loss, report, predictions: result.predictions, probabilities: result.probabilities, dataset, rawDataset: raw };
}

/** The rows shown as the worst predictions. */
export const worstShown = 10;

/** Metrics, residuals and the worst rows in the original units, from the head's outputs (standardised units). */
export function regressionEvaluation(scaling: TargetScaling, truth: Float32Array, outputs: Float32Array | undefined): RegressionEvaluation {
  const width = scaling.names.length;
  const predicted = unscaleOutputs(scaling, outputs ?? new Float32Array());
  return {
    report: regressionReport(truth, predicted, width, scaling.names),
    targetNames: [...scaling.names],
    predicted,
    truth,
    residuals: residualHistogram(truth, predicted, width, 0),
    worst: worstPredictions(truth, predicted, width, 0, worstShown),
  };
}

/** Metrics in the original units: the head's outputs turned back with the stored target scaling. */
async function evaluateRegression(model: Model<Preprocessing>, dataset: Dataset, raw: Dataset, options: EvaluateOptions): Promise<Evaluation> {
  const scaling = model.preprocessing.target!;
  const truth = dataset.targets;
  if (truth === undefined) throw new Error(`${dataset.source}: the file has no ${scaling.names.join(', ')} column to evaluate against`);
  const result = await engine.evaluate(model.spec, model.parameters, { ...dataset, targets: scaleTargets(scaling, truth) }, options);
  const regression = regressionEvaluation(scaling, truth, result.outputs);
  return {
    loss: result.loss, report: emptyClassificationReport(), regression,
    predictions: new Int32Array(), probabilities: new Float32Array(), dataset, rawDataset: raw,
  };
}

export interface RowPrediction {
  /** Regression: predicted values (rows, targets) in the original units; predictions and probabilities are empty. */
  values?: Float64Array;
  predictions: Int32Array;
  /** (rows, classes) row-major. */
  probabilities: Float32Array;
}

/**
 * Predicts rows given as values (count * the model's input size, row-major) the way the data file holds
 * them: pixels 0-255 for images read with a pixelScale, tabular values after categorical encoding. The
 * model's stored preprocessing is applied here, as evaluation applies it, so a face sends raw values.
 */
export async function predictRows(model: Model<Preprocessing>, values: Float32Array, options: EvaluateOptions = {}): Promise<RowPrediction> {
  const rawWidth = rawInputWidth(model);
  if (values.length === 0 || values.length % rawWidth !== 0) {
    throw new Error(`${values.length} values are not whole rows of the model's ${rawWidth} inputs (${model.spec.input.join('x')})`);
  }
  const count = values.length / rawWidth;
  const imputation = model.preprocessing.imputation;
  const width = model.spec.input.reduce((a, b) => a * b, 1);
  const features = imputation
    ? applyImputation(imputation, { features: values, labels: new Int32Array(count), count, featureShape: [rawWidth], featureNames: [], classLabels: [], source: 'input' }).features
    : new Float32Array(values);
  normalizeFeatures(model.preprocessing, features, { scaled: false, featureCount: width });
  const rows: Dataset = {
    features,
    // The engine wants a class per row for its loss; the loss is not used here.
    labels: new Int32Array(count),
    count,
    featureShape: [...model.spec.input],
    featureNames: [],
    classLabels: model.labels,
    source: 'input',
  };
  const result = await engine.evaluate(model.spec, model.parameters, rows, options);
  const predicted = regressionValues(model, result);
  return { predictions: result.predictions, probabilities: result.probabilities, ...(predicted ? { values: predicted } : {}) };
}

/** A regression model's outputs in the original units (undefined for a classifier). */
function regressionValues(model: Model<Preprocessing>, result: engine.EvaluateResult): Float64Array | undefined {
  const scaling = model.preprocessing.target;
  return scaling === undefined ? undefined : unscaleOutputs(scaling, result.outputs ?? new Float32Array());
}

/** Predicts every row of `source`, labelled or not. */
export async function predictWithModel(model: Model<Preprocessing>, source: DataSource, options: EvaluateOptions = {}): Promise<Prediction> {
  const dataset = await prepareForPrediction(model, source);
  if (dataset.count === 0) throw new Error(`${describeDataSource(source)}: no examples to predict`);
  const unlabeledView = { ...dataset, labels: new Int32Array(dataset.count), targets: undefined };
  const result = await engine.evaluate(model.spec, model.parameters, unlabeledView, options);
  const values = regressionValues(model, result);
  const regression = values ? { values, targetNames: [...model.preprocessing.target!.names] } : {};
  return { labels: model.labels, predictions: result.predictions, probabilities: result.probabilities, truth: dataset.labels, dataset, ...regression };
}

/** Prediction input may or may not carry the label column: try labelled first, then without labels. */
async function prepareForPrediction(model: Model<Preprocessing>, source: DataSource): Promise<Dataset> {
  // a folder of class folders is labelled; one of loose images (or mixed) is read whole, without labels
  if (source.kind === 'folder') return prepare(model, source, scanImageFolder(imageFolderRoot(source.path)).classes.length === 0);
  if (source.kind !== 'csv') return prepare(model, source, false);
  try {
    return await prepare(model, source, false);
  } catch (labelledError) {
    try {
      return await prepare(model, source, true);
    } catch {
      throw labelledError; // neither way read it: the labelled reading's error says more
    }
  }
}
