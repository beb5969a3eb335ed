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
