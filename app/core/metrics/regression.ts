// Regression metrics from true targets and predictions (both in the data's original units): the one
// implementation every face shows (the Evaluate screen, `eval --json`, metrics stored in model files).
// Conventions follow scikit-learn: R² per target column with force_finite (a constant column scores 1 when
// predicted exactly, else 0), averaged uniformly over columns like r2_score's 'uniform_average'; MAPE is a
// fraction (0.05 = 5 %) and is left out (null) when some true value is 0, where it would be unbounded.
import { z } from 'zod';

export interface TargetMetrics {
  name: string;
  mae: number;
  rmse: number;
  r2: number;
  /** null when some true value of this target is 0. */
  mape: number | null;
}

export interface RegressionReport {
  count: number;
  /** Averages over the target columns. */
  mae: number;
  rmse: number;
  r2: number;
  mape: number | null;
  perTarget: TargetMetrics[];
}

const targetMetricsSchema = z.strictObject({
  name: z.string(),
  mae: z.number(),
  rmse: z.number(),
  r2: z.number(),
  mape: z.number().nullable(),
});
export const regressionReportSchema = z.strictObject({
  count: z.number().int().nonnegative(),
  mae: z.number(),
  rmse: z.number(),
  r2: z.number(),
  mape: z.number().nullable(),
  perTarget: z.array(targetMetricsSchema).min(1),
});

type Values = ArrayLike<number>;

function checkSizes(truth: Values, predicted: Values, width: number): number {
  if (!Number.isInteger(width) || width < 1) throw new Error(`target count ${width} must be a positive integer`);
  if (truth.length !== predicted.length) throw new Error(`${truth.length} true values but ${predicted.length} predictions`);
  if (truth.length % width !== 0) throw new Error(`${truth.length} values are not whole rows of ${width} targets`);
  return truth.length / width;
}

/** One column's metrics; rows are `width` apart, starting at `column`. */
function columnMetrics(truth: Values, predicted: Values, count: number, width: number, column: number, name: string): TargetMetrics {
  let sum = 0;
  for (let i = 0; i < count; i++) sum += truth[i * width + column];
  const mean = count > 0 ? sum / count : 0;
  let absolute = 0;
  let squared = 0;
  let total = 0;
  let relative = 0;
  let hasZero = false;
  for (let i = 0; i < count; i++) {
    const y = truth[i * width + column];
    const error = predicted[i * width + column] - y;
    absolute += Math.abs(error);
    squared += error * error;
    total += (y - mean) * (y - mean);
    if (y === 0) hasZero = true;
    else relative += Math.abs(error) / Math.abs(y);
  }
  const n = Math.max(count, 1);
  const r2 = total > 0 ? 1 - squared / total : squared === 0 ? 1 : 0;
  return { name, mae: absolute / n, rmse: Math.sqrt(squared / n), r2, mape: hasZero || count === 0 ? null : relative / n };
}

/**
 * MAE, RMSE, R² and MAPE per target column and averaged over columns. `truth` and `predicted` are
 * (count, width) row-major; `names` names the columns (default "target", "target 2", …).
 */
export function regressionReport(truth: Values, predicted: Values, width = 1, names?: readonly string[]): RegressionReport {
  const count = checkSizes(truth, predicted, width);
  const columnNames = names ? [...names] : Array.from({ length: width }, (_, k) => (k === 0 ? 'target' : `target ${k + 1}`));
  if (columnNames.length !== width) throw new Error(`${columnNames.length} target names for ${width} targets`);
  const perTarget = columnNames.map((name, column) => columnMetrics(truth, predicted, count, width, column, name));
  const average = (pick: (m: TargetMetrics) => number) => perTarget.reduce((sum, m) => sum + pick(m), 0) / width;
  const mape = perTarget.every((m) => m.mape !== null) ? average((m) => m.mape!) : null;
  return { count, mae: average((m) => m.mae), rmse: average((m) => m.rmse), r2: average((m) => m.r2), mape, perTarget };
}

export interface Histogram {
  /** bins + 1 edges, ascending. */
  edges: number[];
  counts: number[];
}

/** Residuals (predicted − true) of one target column in `bins` equal-width bins over their range. */
export function residualHistogram(truth: Values, predicted: Values, width = 1, column = 0, bins = 20): Histogram {
  const count = checkSizes(truth, predicted, width);
  if (!Number.isInteger(bins) || bins < 1) throw new Error(`bin count ${bins} must be a positive integer`);
  const residuals = Array.from({ length: count }, (_, i) => predicted[i * width + column] - truth[i * width + column]);
  let low = Infinity;
  let high = -Infinity;
  for (const value of residuals) {
    if (value < low) low = value;
    if (value > high) high = value;
  }
  if (count === 0) return { edges: [0, 1], counts: [0] };
  if (!(high > low)) { // all residuals equal: one bin around them
    return { edges: [low - 0.5, high + 0.5], counts: [count] };
  }
  const step = (high - low) / bins;
  const edges = Array.from({ length: bins + 1 }, (_, k) => low + k * step);
  const counts = new Array<number>(bins).fill(0);
  for (const value of residuals) counts[Math.min(bins - 1, Math.floor((value - low) / step))]++;
  return { edges, counts };
}

export interface WorstPrediction {
  /** Row index into the evaluated data. */
  index: number;
  truth: number;
  predicted: number;
  error: number;
}

/** The `limit` rows with the largest absolute error in one target column, largest first (ties: lower index). */
export function worstPredictions(truth: Values, predicted: Values, width = 1, column = 0, limit = 10): WorstPrediction[] {
  const count = checkSizes(truth, predicted, width);
  const rows: WorstPrediction[] = [];
  for (let index = 0; index < count; index++) {
    const y = truth[index * width + column];
    const p = predicted[index * width + column];
    rows.push({ index, truth: y, predicted: p, error: p - y });
  }
  rows.sort((a, b) => Math.abs(b.error) - Math.abs(a.error) || a.index - b.index);
  return rows.slice(0, Math.max(0, limit));
}
