import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  regressionReport,
  regressionReportSchema,
  residualHistogram,
  worstPredictions,
} from '../../../app/core/metrics/regression';

function close(actual: number | null, expected: number, what: string): void {
  assert.ok(actual !== null && Math.abs(actual - expected) < 1e-12, `${what}: ${actual} != ${expected}`);
}

// Two target columns; expected values from scikit-learn 1.2.1 (r2_score, mean_absolute_error,
// mean_squared_error, mean_absolute_percentage_error with their default multioutput='uniform_average').
const truth = [3, 1, -0.5, 2, 2, 3, 7, 4];
const predicted = [2.5, 1.5, 0.0, 2, 2, 2.5, 8, 5];

describe('regressionReport', () => {
  test('agrees with scikit-learn on two target columns', () => {
    const report = regressionReport(truth, predicted, 2, ['a', 'b']);
    close(report.r2, 0.824304068522484, 'r2');
    close(report.mae, 0.5, 'mae');
    close(report.rmse, 0.6123724356957945, 'rmse');
    close(report.mape, 0.27827380952380953, 'mape');
    assert.equal(report.count, 4);
    assert.deepEqual(report.perTarget.map((t) => t.name), ['a', 'b']);
    regressionReportSchema.parse(report);
  });

  test('MAPE is left out when a true value is 0, the other metrics stay', () => {
    const report = regressionReport([0, 1, 2], [0.5, 1, 2], 1);
    assert.equal(report.mape, null);
    close(report.mae, 0.5 / 3, 'mae');
  });

  test('a constant target scores R² 1 when predicted exactly and 0 otherwise (sklearn force_finite)', () => {
    assert.equal(regressionReport([5, 5, 5], [5, 5, 5]).r2, 1);
    assert.equal(regressionReport([5, 5, 5], [5, 6, 5]).r2, 0);
  });

  test('refuses mismatched sizes', () => {
    assert.throws(() => regressionReport([1, 2], [1]), /2 true values but 1 predictions/);
    assert.throws(() => regressionReport([1, 2, 3], [1, 2, 3], 2), /not whole rows of 2 targets/);
    assert.throws(() => regressionReport([1], [1], 1, ['a', 'b']), /2 target names for 1 targets/);
  });
});

describe('residuals and worst predictions', () => {
  test('the histogram counts every residual once, over their range', () => {
    const hist = residualHistogram([0, 0, 0, 0], [-1, 0, 0.5, 1], 1, 0, 4);
    assert.deepEqual(hist.edges, [-1, -0.5, 0, 0.5, 1]);
    assert.deepEqual(hist.counts, [1, 0, 1, 2]);
  });

  test('equal residuals fall into one bin', () => {
    assert.deepEqual(residualHistogram([1, 2], [2, 3]).counts, [2]);
  });

  test('the worst predictions come largest absolute error first, per column', () => {
    const worst = worstPredictions(truth, predicted, 2, 1, 2);
    assert.deepEqual(worst.map((w) => w.index), [3, 0]);
    assert.deepEqual(worst[0], { index: 3, truth: 4, predicted: 5, error: 1 });
    // column 0's errors: -0.5, 0.5, 0, 1; equal sizes keep the lower row first
    assert.deepEqual(worstPredictions(truth, predicted, 2, 0, 3).map((w) => w.index), [3, 0, 1]);
  });
});
