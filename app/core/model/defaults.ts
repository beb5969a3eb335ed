// The model and training options used when the user gives neither --layers nor --preset
// (docs/LAYERS.md, "Defaults", says why these choices).
import { adamDefaults } from './spec';
import type { LayerSpec, LossName, ModelSpec } from './spec';

export const defaultLoss: LossName = 'softmax_cross_entropy';
export const defaultLearningRate = 0.001;

/**
 * Layers of the default model for `inputShape` with `classCount` classes.
 * Images [C,H,W]: conv 3x3x16 same relu, maxpool 2, conv 3x3x32 same relu, maxpool 2, flatten,
 * dense 64 relu, dense K; a pool is left out where the image is already smaller than 2x2.
 * Flat [F]: dense 100 relu, dense K (scikit-learn's MLPClassifier default hidden layer).
 */
export function defaultLayers(inputShape: readonly number[], classCount: number): LayerSpec[] {
  if (inputShape.length !== 3) {
    return [{ kind: 'dense', units: 100, activation: 'relu' }, { kind: 'dense', units: classCount }];
  }
  const layers: LayerSpec[] = [];
  let height = inputShape[1];
  let width = inputShape[2];
  for (const filters of [16, 32]) {
    layers.push({ kind: 'conv2d', filters, kernel: [3, 3], stride: 1, padding: 'same', activation: 'relu' });
    if (height >= 2 && width >= 2) {
      layers.push({ kind: 'maxpool2d', size: 2, stride: 2 });
      height = Math.floor(height / 2);
      width = Math.floor(width / 2);
    }
  }
  layers.push({ kind: 'flatten' }, { kind: 'dense', units: 64, activation: 'relu' }, { kind: 'dense', units: classCount });
  return layers;
}

/** A classifier needs two classes at least: said in words ("the data has only one class, …"). */
export function tooFewClasses(classCount: number): string {
  const has = classCount === 1 ? 'only one class' : classCount === 0 ? 'no classes' : `${classCount} classes`;
  return `the data has ${has}; a classifier needs at least two`;
}

/** The default spec: defaultLayers, softmax cross-entropy, Adam 1e-3 with Keras' betas and eps. */
export function defaultSpec(inputShape: readonly number[], classCount: number, seed = 0): ModelSpec {
  if (!Number.isInteger(classCount) || classCount < 2) {
    throw new Error(tooFewClasses(classCount));
  }
  const input: ModelSpec['input'] =
    inputShape.length === 3 ? [inputShape[0], inputShape[1], inputShape[2]] : [inputShape.reduce((a, b) => a * b, 1)];
  return {
    input,
    layers: defaultLayers(inputShape, classCount),
    loss: defaultLoss,
    optimizer: { kind: 'adam', lr: defaultLearningRate, ...adamDefaults, ...(input.length === 1 ? { weightDecay: tabularWeightDecay } : {}) },
    seed,
  };
}

/**
 * Weight decay of the default model for tables (its L2 penalty, λ·w on the gradient of every weight), chosen
 * by measurement with a batch of 32 (docs/results/issue13-tabular-suite.md, 20 seeds): 1e-2 keeps diabetes from
 * over-fitting (+0.08 R²) at no cost to the classification tables; 3e-2 costs digits 1.3–1.8 points, 1e-3
 * is too weak. (Not scikit-learn's alpha, which is divided by the batch size: its 1e-4 at batch 200 is 5e-7 here.)
 */
export const tabularWeightDecay = 1e-2;
/**
 * A regression table of fewer rows than this is small: a 5-fold split leaves a handful of test rows, and the
 * default model over-fits it. Such a table gets smallRegressionWeightDecay and no validation share by default,
 * measured with the tabular suite on linnerud (20 rows) and on 24- and 40-row samples of diabetes
 * (docs/results/issue13-small-tables.md): R² +0.4 on linnerud, +0.4 and +0.2 on diabetes, and the messy
 * copies lose far less. Classification tables of that size gained nothing from it and keep the defaults.
 */
export const smallTableRows = 50;
export const smallRegressionWeightDecay = 0.3;

/** Whether a table gets the small-regression defaults. */
export function isSmallRegressionTable(task: string | undefined, rows: number, featureShape: readonly number[]): boolean {
  return task === 'regression' && rows < smallTableRows && featureShape.length === 1;
}

export const defaultValSplit = 0.1;

/** The validation share when none is given: none for a small regression table (every row trains). */
export function defaultValSplitFor(data: { task?: string; count: number; featureShape: readonly number[] }): number {
  return isSmallRegressionTable(data.task, data.count, data.featureShape) ? 0 : defaultValSplit;
}

/** The batch of the default for tables: with scikit-learn's min(200, n) iris gets one step per epoch and stays under-trained (−3 points). */
export const tabularBatchSize = 32;

export interface DefaultTraining {
  batchSize: number;
  epochs: number;
}

/**
 * Batch size and epochs when the user gives none. Images: batch 64, 2 epochs (a small CNN is past 98 %
 * on MNIST after 2). Flat data: batch min(32, n) and 200 epochs (scikit-learn's max_iter), with the default
 * model's weight decay: at least as good as MLPClassifier/MLPRegressor on the tabular suite. The batch never
 * exceeds the number of training samples.
 */
export function defaultTraining(inputShape: readonly number[], trainingSamples: number): DefaultTraining {
  const samples = Math.max(1, Math.floor(trainingSamples));
  if (inputShape.length === 3) return { batchSize: Math.min(64, samples), epochs: 2 };
  return { batchSize: Math.min(tabularBatchSize, samples), epochs: 200 };
}
