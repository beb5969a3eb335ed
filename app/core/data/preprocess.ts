// Feature normalisation (DESIGN §3, §4): none, min-max to [0,1] or z-score. Statistics come from the
// training split only and are stored in the model file, so evaluation applies exactly the same mapping.
//
// Tabular data gets statistics per feature. Image data ([C,H,W]) gets ONE global mean/std (or min/max)
// over all pixels of all training images, stored as one-element arrays: per-pixel statistics would blow
// up the always-black border pixels of MNIST and make the model depend on where a digit sits.
//
// Order at evaluation: raw values → divided by pixelScale (when the data was not scaled on load) →
// (x - mean) / std or (x - min) / (max - min). Constant features are stored with std 1 and max = min + 1,
// so the formulas never divide by zero and a consumer (engine, ONNX export) can use them as they are.
import { z } from 'zod';
import { type Dataset, featureSize, formatShape, isImageShape } from './dataset';
import { csvEncodingSchema } from './encoding';
import { targetScalingSchema } from './targetScaling';
import { applyImputation, imputationSchema } from './imputation';

export const normalizationKinds = ['none', 'minmax', 'zscore'] as const;
export type NormalizationKind = (typeof normalizationKinds)[number];

const positiveInt = z.number().int().positive();
const statistics = z.array(z.number().finite()).min(1);

export const preprocessingSchema = z
  .strictObject({
    kind: z.enum(normalizationKinds),
    /** Values per example; the statistics have this many entries, or one (global, image data). */
    featureCount: positiveInt.optional(),
    mean: statistics.optional(),
    std: statistics.optional(),
    min: statistics.optional(),
    max: statistics.optional(),
    /** [C,H,W] for image data. */
    imageShape: z.tuple([positiveInt, positiveInt, positiveInt]).optional(),
    /** An image folder's images were resized to imageShape by this (a centre crop or a letterbox). */
    imageFit: z.enum(['crop', 'letterbox']).optional(),
    /** Raw values were divided by this before normalisation (255 for pixels). */
    pixelScale: z.number().positive().finite().optional(),
    /** How a CSV's columns became features (label column, categorical maps, feature names). */
    encoding: csvEncodingSchema.optional(),
    /**
     * Missing values (NaN after reading) filled as fitted on the training split, with indicator features
     * appended; applied before the normalisation, whose statistics are of the imputed features.
     */
    imputation: imputationSchema.optional(),
    /** Regression: how targets were standardised for training (outputs are turned back with it). */
    target: targetScalingSchema.optional(),
    /**
     * Classes named by the user (IDX, MNIST): each class's label as the data files write it ("0".."9"), in
     * the order of the model's labels, so files of the same kind are read by those values.
     */
    labelValues: z.array(z.string().max(1000)).min(1).optional(),
  })
  .superRefine((value, context) => {
    const issue = (message: string) => context.addIssue({ code: 'custom', message });
    const fields = value.kind === 'zscore' ? (['mean', 'std'] as const) : value.kind === 'minmax' ? (['min', 'max'] as const) : [];
    for (const field of fields) {
      const values = value[field];
      if (values === undefined) { issue(`${value.kind} needs "${field}"`); continue; }
      if (value.featureCount !== undefined && values.length !== 1 && values.length !== value.featureCount) {
        issue(`"${field}" has ${values.length} entries, expected 1 or ${value.featureCount}`);
      }
    }
    if (value.kind === 'zscore' && value.mean && value.std) {
      if (value.mean.length !== value.std.length) issue('"mean" and "std" differ in length');
      if (value.std.some((std) => !(std > 0))) issue('"std" must be positive');
    }
    if (value.kind === 'minmax' && value.min && value.max) {
      if (value.min.length !== value.max.length) issue('"min" and "max" differ in length');
      if (value.min.some((min, i) => !(value.max![i] > min))) issue('"max" must exceed "min"');
    }
    if (value.imageShape && value.featureCount !== undefined && featureSize(value.imageShape) !== value.featureCount) {
      issue(`imageShape ${formatShape(value.imageShape)} does not hold ${value.featureCount} features`);
    }
  });
export type Preprocessing = z.infer<typeof preprocessingSchema>;

/** Validates a parsed JSON value (from a model file); throws an Error naming the first problem. */
export function parsePreprocessing(value: unknown): Preprocessing {
  const result = preprocessingSchema.safeParse(value);
  if (!result.success) {
    const first = result.error.issues[0];
    const where = first.path.length > 0 ? ` at ${first.path.join('.')}` : '';
    throw new Error(`preprocessing${where}: ${first.message}`);
  }
  return result.data;
}

export interface FitOptions {
  /** Examples to take statistics from (the training split); default: all of the dataset. */
  indices?: ArrayLike<number>;
  /** One statistic over all features; default: true for image data, false for tabular data. */
  global?: boolean;
}

/** Fits the normalisation on the training examples and records what evaluation must repeat. */
export function fitNormalization(kind: NormalizationKind, dataset: Dataset, options: FitOptions = {}): Preprocessing {
  if (!normalizationKinds.includes(kind)) throw new Error(`normalisation must be one of ${normalizationKinds.join(', ')}, got "${String(kind)}"`);
  const width = featureSize(dataset.featureShape);
  const preprocessing: Preprocessing = {
    kind,
    featureCount: width,
    ...(isImageShape(dataset.featureShape) ? { imageShape: [...dataset.featureShape] as [number, number, number] } : {}),
    ...(dataset.pixelScale !== undefined ? { pixelScale: dataset.pixelScale } : {}),
    ...(dataset.imageFit !== undefined ? { imageFit: dataset.imageFit } : {}),
    ...(dataset.encoding !== undefined ? { encoding: dataset.encoding } : {}),
  };
  if (kind === 'none') return preprocessing;

  const rows = options.indices ?? null;
  const rowCount = rows === null ? dataset.count : rows.length;
  if (rowCount === 0) throw new Error(`${dataset.source}: cannot fit ${kind} normalisation on an empty training split`);
  const global = options.global ?? isImageShape(dataset.featureShape);
  const slots = global ? 1 : width;
  const features = dataset.features;
  const rowAt = (i: number): number => (rows === null ? i : rows[i]) * width;

  if (kind === 'minmax') {
    const min = new Float64Array(slots).fill(Infinity);
    const max = new Float64Array(slots).fill(-Infinity);
    for (let i = 0; i < rowCount; i++) {
      const base = rowAt(i);
      for (let j = 0; j < width; j++) {
        const value = features[base + j];
        const slot = global ? 0 : j;
        if (value < min[slot]) min[slot] = value;
        if (value > max[slot]) max[slot] = value;
      }
    }
    for (let slot = 0; slot < slots; slot++) if (!(max[slot] > min[slot])) max[slot] = min[slot] + 1;
    return { ...preprocessing, min: Array.from(min), max: Array.from(max) };
  }

  // z-score: two passes in float64; population standard deviation (divide by n), like scikit-learn.
  const sum = new Float64Array(slots);
  for (let i = 0; i < rowCount; i++) {
    const base = rowAt(i);
    if (global) {
      let rowSum = 0;
      for (let j = 0; j < width; j++) rowSum += features[base + j];
      sum[0] += rowSum;
    } else {
      for (let j = 0; j < width; j++) sum[j] += features[base + j];
    }
  }
  const perSlot = global ? rowCount * width : rowCount;
  const mean = sum.map((total) => total / perSlot);
  const squares = new Float64Array(slots);
  for (let i = 0; i < rowCount; i++) {
    const base = rowAt(i);
    if (global) {
      const center = mean[0];
      let rowSquares = 0;
      for (let j = 0; j < width; j++) {
        const delta = features[base + j] - center;
        rowSquares += delta * delta;
      }
      squares[0] += rowSquares;
    } else {
      for (let j = 0; j < width; j++) {
        const delta = features[base + j] - mean[j];
        squares[j] += delta * delta;
      }
    }
  }
  const std = squares.map((total) => {
    const deviation = Math.sqrt(total / perSlot);
    return deviation > 1e-12 * Math.max(1, Math.abs(deviation)) && Number.isFinite(deviation) ? deviation : 1;
  });
  return { ...preprocessing, mean: Array.from(mean), std: Array.from(std) };
}

/** y = x * scale + shift per feature, the normalisation as one affine map (pixelScale included). */
export function normalizationAffine(preprocessing: Preprocessing, featureCount: number, options: { includePixelScale?: boolean } = {}) {
  const scale = new Float64Array(featureCount).fill(1);
  const shift = new Float64Array(featureCount);
  const pixel = options.includePixelScale && preprocessing.pixelScale !== undefined ? 1 / preprocessing.pixelScale : 1;
  const pick = (values: number[], j: number) => (values.length === 1 ? values[0] : values[j]);
  for (let j = 0; j < featureCount; j++) {
    if (preprocessing.kind === 'zscore') {
      const std = pick(preprocessing.std!, j);
      scale[j] = pixel / std;
      shift[j] = -pick(preprocessing.mean!, j) / std;
    } else if (preprocessing.kind === 'minmax') {
      const min = pick(preprocessing.min!, j);
      const range = pick(preprocessing.max!, j) - min;
      scale[j] = pixel / range;
      shift[j] = -min / range;
    } else {
      scale[j] = pixel;
    }
  }
  return { scale, shift };
}

function checkWidth(preprocessing: Preprocessing, width: number, where: string): void {
  if (preprocessing.featureCount !== undefined && preprocessing.featureCount !== width) {
    throw new Error(`${where}: ${width} features per example, but the model was trained on ${preprocessing.featureCount}`);
  }
  for (const field of ['mean', 'std', 'min', 'max'] as const) {
    const values = preprocessing[field];
    if (values !== undefined && values.length !== 1 && values.length !== width) {
      throw new Error(`${where}: preprocessing "${field}" has ${values.length} entries for ${width} features`);
    }
  }
}

/**
 * Normalises rows of features in place (`values.length` a multiple of the feature count). `scaled`: the
 * values were already divided by pixelScale (as loaders do); otherwise they are raw and get divided first.
 */
export function normalizeFeatures(preprocessing: Preprocessing, values: Float32Array, options: { scaled?: boolean; featureCount?: number } = {}): void {
  const width = options.featureCount ?? preprocessing.featureCount ?? values.length;
  if (width <= 0 || values.length % width !== 0) throw new Error(`${values.length} values are not whole examples of ${width} features`);
  checkWidth(preprocessing, width, 'input');
  const pixel = !options.scaled && preprocessing.pixelScale !== undefined ? preprocessing.pixelScale : 1;
  const kind = preprocessing.kind;
  if (kind === 'none' && pixel === 1) return;
  const pick = (field: number[] | undefined, fallback: number) => {
    const out = new Float64Array(width).fill(fallback);
    if (field !== undefined) for (let j = 0; j < width; j++) out[j] = field.length === 1 ? field[0] : field[j];
    return out;
  };
  // (x / pixel - center) / spread, computed in float64 per value.
  const center = kind === 'zscore' ? pick(preprocessing.mean, 0) : kind === 'minmax' ? pick(preprocessing.min, 0) : pick(undefined, 0);
  const spread = kind === 'zscore'
    ? pick(preprocessing.std, 1)
    : kind === 'minmax'
      ? pick(preprocessing.max, 1).map((max, j) => max - center[j])
      : pick(undefined, 1);
  for (let base = 0; base < values.length; base += width) {
    for (let j = 0; j < width; j++) values[base + j] = (values[base + j] / pixel - center[j]) / spread[j];
  }
}

/**
 * A copy of the dataset normalised as the model's training data was. Data not scaled on load (no
 * pixelScale) is taken as raw and divided by the model's pixelScale first.
 */
export function applyNormalization(preprocessing: Preprocessing, dataset: Dataset): Dataset {
  const width = featureSize(dataset.featureShape);
  checkWidth(preprocessing, width, dataset.source);
  if (preprocessing.imageShape !== undefined && isImageShape(dataset.featureShape)
    && formatShape(preprocessing.imageShape) !== formatShape(dataset.featureShape)) {
    throw new Error(`${dataset.source}: images are ${formatShape(dataset.featureShape)}, the model takes ${formatShape(preprocessing.imageShape)}`);
  }
  if (preprocessing.pixelScale !== undefined && dataset.pixelScale !== undefined && preprocessing.pixelScale !== dataset.pixelScale) {
    throw new Error(`${dataset.source}: values were divided by ${dataset.pixelScale} on load, the model expects ${preprocessing.pixelScale}`);
  }
  const features = new Float32Array(dataset.features);
  normalizeFeatures(preprocessing, features, { scaled: dataset.pixelScale !== undefined, featureCount: width });
  const pixelScale = dataset.pixelScale ?? preprocessing.pixelScale;
  const featureShape = preprocessing.imageShape !== undefined && !isImageShape(dataset.featureShape)
    ? [...preprocessing.imageShape]
    : [...dataset.featureShape];
  return { ...dataset, features, featureShape, ...(pixelScale !== undefined ? { pixelScale } : {}) };
}

/**
 * A dataset as read (missing cells NaN) made ready for the model: its imputation (fill values, indicator
 * features), then its normalisation. Training applies the imputation before splitting, so it calls
 * applyNormalization alone; evaluation and prediction read new files and call this.
 */
export function applyPreprocessing(preprocessing: Preprocessing, dataset: Dataset): Dataset {
  const imputed = preprocessing.imputation !== undefined ? applyImputation(preprocessing.imputation, dataset) : dataset;
  return applyNormalization(preprocessing, imputed);
}
