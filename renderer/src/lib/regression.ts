// What the screens need to tell a regression run or model from a classifier, and how its metrics read.
// Pure functions over the API's types: no state, no DOM.
import type { ModelInfo, RegressionReport, TrainingDone, TrainPlan } from '../../../app/api/types';
import { formatPercent } from './format';

/** A run predicts numbers: its plan says so, or (a plan not yet seen) its test metrics or epochs do. */
export function isRegressionRun(plan: TrainPlan | undefined, done?: TrainingDone, epochs: readonly { trainR2?: number | null }[] = []): boolean {
  if (plan?.task) return plan.task === 'regression';
  if (done?.test?.regression) return true;
  return epochs.some((epoch) => epoch.trainR2 !== undefined);
}

export function isRegressionModel(model: ModelInfo): boolean {
  return model.spec.task === 'regression';
}

/** Why MAPE may be missing: it divides by the true values, so one true 0 makes it unbounded. */
export const mapeMissingReason = 'n/a: a true value is 0';

export function formatMape(mape: number | null | undefined): string {
  return mape === null || mape === undefined || !Number.isFinite(mape) ? mapeMissingReason : formatPercent(mape, 1);
}

/** A model's test R² as its file keeps it (model.metrics.test is a RegressionReport for a regression model). */
export function testR2(model: ModelInfo): number | undefined {
  const test = (model.metrics as { test?: Partial<RegressionReport> } | undefined)?.test;
  return typeof test?.r2 === 'number' ? test.r2 : undefined;
}

/** The common axis range of a predicted-vs-true plot: both axes alike, so y = x is the diagonal; a little margin. */
export function diagonalRange(points: readonly { truth: number; predicted: number }[]): { min: number; max: number } {
  let min = Infinity;
  let max = -Infinity;
  for (const point of points) {
    for (const value of [point.truth, point.predicted]) {
      if (!Number.isFinite(value)) continue;
      if (value < min) min = value;
      if (value > max) max = value;
    }
  }
  if (!(max >= min)) return { min: 0, max: 1 };
  const margin = max > min ? (max - min) * 0.04 : Math.max(1, Math.abs(min) * 0.1);
  return { min: min - margin, max: max + margin };
}

/** "−1.5 to 0.25": a histogram bin's range for labels and the text alternative. */
export function binLabel(edges: readonly number[], bin: number, format: (value: number) => string): string {
  return `${format(edges[bin])} to ${format(edges[bin + 1])}`;
}

/** What a regression model predicts, for a table cell: its targets' names when its test report names them. */
export function predictedTargets(model: ModelInfo): string {
  const names = (model.metrics as { test?: Partial<RegressionReport> } | undefined)?.test?.perTarget?.map((target) => target.name) ?? [];
  return names.length > 0 ? names.join(', ') : 'a number';
}
