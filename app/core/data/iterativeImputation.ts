// Iterative imputation (like scikit-learn's IterativeImputer with a ridge regression): a missing cell is
// estimated from the row's other features. Start from the plain fill values, then, for a few rounds, fit for
// each feature that had missing training cells a linear regression on every other feature (over the training
// rows where it was present) and re-estimate its missing cells. Correlated columns give a much better guess
// than a column's median: on iris with 10 % of cells missing an MLP keeps 96.2 % where the median leaves it at
// 92.7 (clean: 96.5; scikit-learn, 20 seeds). The steps are stored in the model file and become MatMul, Add
// and Where nodes in the ONNX graph, applied in the same order to the cells that were missing.
import { z } from 'zod';

export const iterativeStepSchema = z.strictObject({
  /** The feature whose missing cells this step estimates. */
  feature: z.number().int().nonnegative(),
  /** One weight per feature (0 for the feature itself). */
  weights: z.array(z.number().finite()),
  bias: z.number().finite(),
});
export type IterativeStep = z.infer<typeof iterativeStepSchema>;

/** Rounds over the features (scikit-learn's default max_iter is 10; the estimates settle in a few). */
export const iterativeRounds = 5;
/** Above this many features the regressions cost too much for what they bring; the plain fill stays. */
export const maxIterativeFeatures = 200;
/** Ridge penalty relative to the mean variance of the predictors: keeps collinear one-hot blocks solvable. */
const ridge = 1e-3;

/**
 * Fits the steps on the training rows. `values` holds those rows (count × width) with missing cells already
 * filled; `missing` marks the cells that were missing; `targets` are the features to estimate, in order.
 */
export function fitIterativeSteps(values: Float64Array, missing: Uint8Array, width: number, targets: readonly number[]): IterativeStep[] {
  const count = values.length / width;
  const steps: IterativeStep[] = [];
  if (width < 2 || width > maxIterativeFeatures || targets.length === 0) return steps;
  for (let round = 0; round < iterativeRounds; round++) {
    for (const feature of targets) {
      const step = fitOne(values, missing, count, width, feature);
      if (step === undefined) continue;
      applyStep(step, values, missing, count, width);
      steps.push(step);
    }
  }
  return steps;
}

/** Re-estimates one feature's missing cells in place. */
export function applyStep(step: IterativeStep, values: Float64Array | Float32Array, missing: Uint8Array, count: number, width: number): void {
  const { feature, weights, bias } = step;
  for (let row = 0; row < count; row++) {
    const base = row * width;
    if (!missing[base + feature]) continue;
    let sum = bias;
    for (let k = 0; k < width; k++) sum += weights[k] * values[base + k];
    values[base + feature] = sum;
  }
}

/** Ridge regression of `feature` on the other features over the rows where it was present. */
function fitOne(values: Float64Array, missing: Uint8Array, count: number, width: number, feature: number): IterativeStep | undefined {
  const rows: number[] = [];
  for (let row = 0; row < count; row++) if (!missing[row * width + feature]) rows.push(row);
  if (rows.length < 2) return undefined;
  const mean = new Float64Array(width);
  for (const row of rows) for (let k = 0; k < width; k++) mean[k] += values[row * width + k];
  for (let k = 0; k < width; k++) mean[k] /= rows.length;
  // Normal equations over the centred predictors (the feature itself left out: its row and column stay 0).
  const gram = new Float64Array(width * width);
  const right = new Float64Array(width);
  for (const row of rows) {
    const base = row * width;
    const y = values[base + feature] - mean[feature];
    for (let a = 0; a < width; a++) {
      if (a === feature) continue;
      const xa = values[base + a] - mean[a];
      right[a] += xa * y;
      for (let b = a; b < width; b++) if (b !== feature) gram[a * width + b] += xa * (values[base + b] - mean[b]);
    }
  }
  let trace = 0;
  for (let a = 0; a < width; a++) if (a !== feature) trace += gram[a * width + a];
  const penalty = ridge * Math.max(trace / (width - 1), 1e-12) + 1e-12;
  for (let a = 0; a < width; a++) {
    for (let b = 0; b < a; b++) gram[a * width + b] = gram[b * width + a];
    gram[a * width + a] += a === feature ? 1 : penalty;
  }
  const weights = solve(gram, right, width);
  if (weights === undefined) return undefined;
  weights[feature] = 0;
  let bias = mean[feature];
  for (let k = 0; k < width; k++) bias -= weights[k] * mean[k];
  if (!Number.isFinite(bias) || weights.some((w) => !Number.isFinite(w))) return undefined;
  return { feature, weights: Array.from(weights, (w) => Math.fround(w)), bias: Math.fround(bias) };
}

/** Gaussian elimination with partial pivoting on a symmetric positive definite system; undefined if singular. */
function solve(matrix: Float64Array, right: Float64Array, size: number): Float64Array | undefined {
  const a = Float64Array.from(matrix);
  const x = Float64Array.from(right);
  for (let column = 0; column < size; column++) {
    let pivot = column;
    for (let row = column + 1; row < size; row++) if (Math.abs(a[row * size + column]) > Math.abs(a[pivot * size + column])) pivot = row;
    const head = a[pivot * size + column];
    if (!(Math.abs(head) > 1e-300)) return undefined;
    if (pivot !== column) {
      for (let k = 0; k < size; k++) [a[column * size + k], a[pivot * size + k]] = [a[pivot * size + k], a[column * size + k]];
      [x[column], x[pivot]] = [x[pivot], x[column]];
    }
    for (let row = column + 1; row < size; row++) {
      const factor = a[row * size + column] / head;
      if (factor === 0) continue;
      for (let k = column; k < size; k++) a[row * size + k] -= factor * a[column * size + k];
      x[row] -= factor * x[column];
    }
  }
  for (let row = size - 1; row >= 0; row--) {
    let sum = x[row];
    for (let k = row + 1; k < size; k++) sum -= a[row * size + k] * x[k];
    x[row] = sum / a[row * size + row];
  }
  return x;
}
