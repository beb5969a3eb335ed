// Imputation (issue 13): fitted on the training rows only, NaN-free afterwards, indicators appended.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Dataset } from '../../../app/core/data/dataset';
import { parseDate } from '../../../app/core/data/dates';
import { applyImputation, fitImputation, hasMissing, imputationSchema } from '../../../app/core/data/imputation';
import { missingTest } from '../../../app/core/data/missing';

function table(rows: number[][], names: string[]): Dataset {
  return {
    features: Float32Array.from(rows.flat()), labels: new Int32Array(rows.length), count: rows.length,
    featureShape: [names.length], featureNames: names, classLabels: ['a'], source: 'table',
  };
}

const data = table([[1, NaN, 5], [3, 10, NaN], [NaN, 10, 7], [100, 2, NaN]], ['x', 'y', 'z']);

describe('imputation', () => {
  test('mean, median, most frequent and constant, fitted on the training rows only', () => {
    const train = [0, 1, 2]; // row 3 (x = 100) is validation data: it must not move the fill values
    assert.deepEqual(fitImputation(data, train, { default: { strategy: 'mean' } }).fill, [2, 10, 6]);
    assert.deepEqual(fitImputation(data, train, { default: { strategy: 'median' } }).fill, [2, 10, 6]);
    assert.deepEqual(fitImputation(data, [0, 1, 2, 3], { default: { strategy: 'median' } }).fill, [3, 10, 6]);
    assert.deepEqual(fitImputation(data, [0, 1, 2, 3], { default: { strategy: 'most_frequent' } }).fill, [1, 10, 5]);
    const perColumn = fitImputation(data, train, { default: { strategy: 'mean' }, columns: { y: { strategy: 'constant', fillValue: -1 } } });
    assert.deepEqual(perColumn.fill, [2, -1, 6]);
    assert.deepEqual(perColumn.strategies, ['mean', 'constant', 'mean']);
    // No filled training value: 0.
    assert.deepEqual(fitImputation(data, [3], { default: { strategy: 'mean' } }).fill, [100, 2, 0]);
  });

  test('apply: no NaN left, indicators appended as <feature>_missing for features missing in training', () => {
    const imputation = fitImputation(data, [0, 1], { default: { strategy: 'mean', indicator: true } });
    assert.deepEqual(imputation.indicators, [1, 2]); // x has no missing cell in rows 0-1
    const imputed = applyImputation(imputation, data);
    assert.ok(!hasMissing(imputed));
    assert.deepEqual(imputed.featureNames, ['x', 'y', 'z', 'y_missing', 'z_missing']);
    assert.deepEqual(imputed.featureShape, [5]);
    assert.deepEqual(Array.from(imputed.features), [
      1, 10, 5, 1, 0,
      3, 10, 5, 0, 1,
      2, 10, 7, 0, 0,
      100, 2, 5, 0, 1,
    ]);
    assert.ok(hasMissing(data), 'the input is left as it was');
    assert.deepEqual(imputationSchema.parse(JSON.parse(JSON.stringify(imputation))), imputation);
  });

  test('a date column name covers its parts; the stored form is checked', () => {
    const dates = table([[2024, NaN], [NaN, 3]], ['d.year', 'd.month']);
    const imputation = fitImputation(dates, [0, 1], { default: { strategy: 'mean' }, columns: { d: { strategy: 'constant', fillValue: 7 } } });
    assert.deepEqual(imputation.fill, [7, 7]);
    assert.throws(() => imputationSchema.parse({ fill: [1], strategies: ['mean'], indicators: [1] }), /outside 0..0/);
    assert.throws(() => applyImputation(imputation, table([[1, 2, 3]], ['a', 'b', 'c'])), /the imputation is for 2 features, the data has 3/);
    assert.throws(() => fitImputation(dates, [0], { default: { strategy: 'constant', fillValue: 1e39 } }), /finite 32-bit/);
  });
});

describe('iterative imputation', () => {
  // b = 2a + 1 and c = -a: a missing b or c is recovered from the row's a, a missing a from b and c.
  const rows = Array.from({ length: 40 }, (_, i) => [i, 2 * i + 1, -i]);
  const holes = rows.map((row, i) => row.map((value, k) => ((i * 3 + k) % 7 === 0 ? NaN : value)));

  test('a missing cell is estimated from the other features, far closer than the median', () => {
    const data = table(holes, ['a', 'b', 'c']);
    const all = Array.from({ length: 40 }, (_, i) => i);
    const imputation = fitImputation(data, all, { default: { strategy: 'iterative' } });
    assert.ok((imputation.iterative ?? []).length > 0, 'steps were fitted');
    const filled = applyImputation(imputation, data).features;
    const median = applyImputation(fitImputation(data, all, { default: { strategy: 'median' } }), data).features;
    let iterativeError = 0;
    let medianError = 0;
    holes.forEach((row, i) => row.forEach((value, k) => {
      if (!Number.isNaN(value)) return;
      iterativeError = Math.max(iterativeError, Math.abs(filled[i * 3 + k] - rows[i][k]));
      medianError = Math.max(medianError, Math.abs(median[i * 3 + k] - rows[i][k]));
    }));
    assert.ok(iterativeError < 0.5, `estimates within 0.5 of the truth: ${iterativeError}`);
    assert.ok(medianError > 10, `the median misses by ${medianError}`);
    assert.equal(hasMissing({ ...data, features: filled }), false);
    imputationSchema.parse(imputation);
  });

  test('present cells never change, and features without missing training cells get no step', () => {
    const data = table(holes.map((row) => [row[0], row[1], rows[0][2]]), ['a', 'b', 'c']);
    const imputation = fitImputation(data, Array.from({ length: 40 }, (_, i) => i), { default: { strategy: 'iterative' } });
    const features = new Set((imputation.iterative ?? []).map((step) => step.feature));
    assert.deepEqual([...features].sort(), [0, 1]);
    const filled = applyImputation(imputation, data).features;
    holes.forEach((row, i) => row.slice(0, 2).forEach((value, k) => {
      if (!Number.isNaN(value)) assert.equal(filled[i * 3 + k], Math.fround(value));
    }));
  });

  test('a stored step must fit the features', () => {
    assert.throws(() => imputationSchema.parse({ fill: [0, 0], strategies: ['iterative', 'iterative'], indicators: [], iterative: [{ feature: 0, weights: [0], bias: 0 }] }), /iterative step/);
  });
});

describe('markers and dates', () => {
  test('missing markers: trimmed, any case, configurable', () => {
    const isMissing = missingTest();
    for (const text of ['', ' ', 'NA', 'na', ' N/A ', 'NaN', 'NULL', '?', '-']) assert.ok(isMissing(text), JSON.stringify(text));
    for (const text of ['0', '-1', 'none', 'NAN?', 'n.a.']) assert.ok(!isMissing(text), JSON.stringify(text));
    assert.ok(missingTest(['missing'])(' Missing '));
    assert.ok(!missingTest(['missing'])(''));
  });

  test('dates: ISO and slashes, real days only, weekday from Monday', () => {
    assert.deepEqual(parseDate('2024-01-01'), { year: 2024, month: 1, day: 1, weekday: 0 });
    assert.deepEqual(parseDate('2024/2/29 13:05:59.5+02:00'), { year: 2024, month: 2, day: 29, weekday: 3, hour: 13 });
    assert.deepEqual(parseDate('2023-12-31T23:59Z'), { year: 2023, month: 12, day: 31, weekday: 6, hour: 23 });
    for (const text of ['2023-02-29', '2024-13-01', '01/02/2020', '2024-01-01 25:00', '2024-01/01', '20240101', 'soon']) {
      assert.equal(parseDate(text), undefined, text);
    }
  });
});
