// The in-memory dataset every face and the engine share: contiguous Float32 features, Int32 labels.
import type { CsvEncoding } from './encoding';
import type { ImageFit } from './imageFolder';

export interface Dataset {
  /** count * featureSize values, row-major; for images each row is C*H*W in CHW order. */
  features: Float32Array;
  /** Class index per example (into classLabels); -1 for unlabeled examples. */
  labels: Int32Array;
  count: number;
  /** [F] for tabular data, [C,H,W] for images. */
  featureShape: number[];
  featureNames: string[];
  /** Class index → original label text (or the name given to it: see labelValues). */
  classLabels: string[];
  /**
   * Class index → the label as the file writes it, when the classes were given names of their own
   * (IDX and MNIST with class names, app/core/data/classNames.ts); absent when classLabels are the file's.
   */
  labelValues?: string[];
  /** Where it came from: a path, or `mnist:train`. */
  source: string;
  /** Raw values were divided by this on load (255 for IDX and built-in MNIST pixels). */
  pixelScale?: number;
  /** How an image folder's images were brought to featureShape (image folders only). */
  imageFit?: ImageFit;
  /** How CSV columns became features (CSV datasets only). */
  encoding?: CsvEncoding;
  /** Absent: classification. */
  task?: 'classification' | 'regression';
  /** Why the task is what it is, e.g. "price: 4,998 distinct numbers → regression" (CSV datasets). */
  taskReason?: string;
  /** Regression: count x targetNames.length values, row-major, in the file's units; absent for unlabeled data. */
  targets?: Float32Array;
  /** Regression: the target column names. */
  targetNames?: string[];
  /** Plain-language notes from loading: columns left out, rows dropped, cells read as missing, … */
  notes?: string[];
  /** Image folders: each example's file inside the folder ("cats/001.jpg"), so that predictions name them. */
  exampleNames?: string[];
}

export function featureSize(shape: readonly number[]): number {
  let size = 1;
  for (const dim of shape) size *= dim;
  return size;
}

export function isImageShape(shape: readonly number[]): shape is [number, number, number] {
  return shape.length === 3;
}

/** `1x28x28` */
export function formatShape(shape: readonly number[]): string {
  return shape.join('x');
}

/** Parses `1x28x28`, `28x28` (one channel) or `1,28,28` into [C,H,W]; throws on anything else. */
export function parseImageShape(text: string): [number, number, number] {
  const parts = text.trim().split(/\s*[x×,]\s*/i);
  const dims = parts.map((part) => (/^\d+$/.test(part) ? Number(part) : NaN));
  if (dims.some((dim) => !Number.isInteger(dim) || dim <= 0) || dims.length < 2 || dims.length > 3) {
    throw new Error(`image shape "${text}" is not CxHxW or HxW with positive integers (e.g. 1x28x28)`);
  }
  return dims.length === 2 ? [1, dims[0], dims[1]] : [dims[0], dims[1], dims[2]];
}

/** Examples per class, indexed like classLabels (unlabeled examples are not counted). */
export function classCounts(dataset: Dataset): number[] {
  const counts = new Array<number>(dataset.classLabels.length).fill(0);
  for (let i = 0; i < dataset.count; i++) {
    const label = dataset.labels[i];
    if (label >= 0 && label < counts.length) counts[label]++;
  }
  return counts;
}

/** Checks the invariants above; throws an Error naming the first one broken. */
export function checkDataset(dataset: Dataset): void {
  const size = featureSize(dataset.featureShape);
  if (!Number.isInteger(dataset.count) || dataset.count < 0) throw new Error(`${dataset.source}: bad count ${dataset.count}`);
  if (dataset.features.length !== dataset.count * size) {
    throw new Error(`${dataset.source}: ${dataset.features.length} feature values, expected ${dataset.count} x ${size}`);
  }
  if (dataset.labels.length !== dataset.count) {
    throw new Error(`${dataset.source}: ${dataset.labels.length} labels, expected ${dataset.count}`);
  }
  if (dataset.featureNames.length !== 0 && dataset.featureNames.length !== size) {
    throw new Error(`${dataset.source}: ${dataset.featureNames.length} feature names, expected ${size}`);
  }
  if (dataset.targets !== undefined) {
    const width = dataset.targetNames?.length ?? 0;
    if (width === 0 || dataset.targets.length !== dataset.count * width) {
      throw new Error(`${dataset.source}: ${dataset.targets.length} target values, expected ${dataset.count} x ${width}`);
    }
  }
  for (let i = 0; i < dataset.count; i++) {
    const label = dataset.labels[i];
    if (label < -1 || label >= dataset.classLabels.length) {
      throw new Error(`${dataset.source}: example ${i} has label ${label}, outside 0..${dataset.classLabels.length - 1}`);
    }
  }
}
