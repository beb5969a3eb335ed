// Normalisation: statistics from the training split only, the same mapping at evaluation, zero variance,
// global statistics for images, and the JSON form that goes into the model file.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Dataset } from '../../../app/core/data/dataset';
import {
  applyNormalization, fitNormalization, normalizationAffine, normalizeFeatures, parsePreprocessing, preprocessingSchema,
} from '../../../app/core/data/preprocess';
import { subset } from '../../../app/core/data/split';

function tabular(rows: number[][], labels?: number[]): Dataset {
  return {
    features: Float32Array.from(rows.flat()),
    labels: Int32Array.from(labels ?? rows.map(() => 0)),
    count: rows.length,
    featureShape: [rows[0].length],
    featureNames: rows[0].map((_, j) => `f${j}`),
    classLabels: ['a', 'b'],
    source: 'table',
  };
}

const close = (actual: ArrayLike<number>, expected: number[], tolerance = 1e-6) => {
  assert.equal(actual.length, expected.length);
  for (let i = 0; i < expected.length; i++) assert.ok(Math.abs(actual[i] - expected[i]) <= tolerance, `[${i}] ${actual[i]} vs ${expected[i]}`);
};

describe('normalisation', () => {
  // Feature 0: 1, 3 in training; feature 1 is constant 5; the last row is held out and extreme.
  const all = tabular([[1, 5], [3, 5], [100, -7]], [0, 1, 0]);
  const trainIndices = [0, 1];

  test('z-score: per-feature mean and population std from the training rows only', () => {
    const p = fitNormalization('zscore', all, { indices: trainIndices });
    assert.deepEqual(p.mean, [2, 5]);
    assert.deepEqual(p.std, [1, 1]); // feature 1 has zero variance: std 1
    assert.equal(p.featureCount, 2);
    const fromSubset = fitNormalization('zscore', subset(all, trainIndices));
    assert.deepEqual(fromSubset, p);
    const applied = applyNormalization(p, all);
    close(applied.features, [-1, 0, 1, 0, 98, -12]);
    assert.deepEqual(Array.from(all.features), [1, 5, 3, 5, 100, -7], 'input untouched');
    // Evaluation data goes through the very same mapping.
    const later = applyNormalization(p, tabular([[2, 6]]));
    close(later.features, [0, 1]);
    assert.ok(applied.features.every(Number.isFinite));
  });

  test('z-score std is the population one', () => {
    const p = fitNormalization('zscore', tabular([[1], [2], [3], [4]]));
    close(p.std!, [Math.sqrt(1.25)], 1e-12);
    close(p.mean!, [2.5], 1e-12);
  });

  test('min-max: per-feature range from the training rows; a constant feature gets range 1', () => {
    const p = fitNormalization('minmax', all, { indices: trainIndices });
    assert.deepEqual(p.min, [1, 5]);
    assert.deepEqual(p.max, [3, 6]);
    close(applyNormalization(p, all).features, [0, 0, 1, 0, 49.5, -12]);
  });

  test('none keeps values and still records the shape', () => {
    const p = fitNormalization('none', all);
    assert.deepEqual(p, { kind: 'none', featureCount: 2 });
    assert.deepEqual(Array.from(applyNormalization(p, all).features), [1, 5, 3, 5, 100, -7]);
  });

  test('image data: one global statistic over all pixels', () => {
    const images: Dataset = {
      features: Float32Array.from([0, 0, 1, 1, /* second image */ 0, 1, 1, 1, /* held out */ 1, 1, 1, 1]),
      labels: Int32Array.from([0, 1, 0]),
      count: 3,
      featureShape: [1, 2, 2],
      featureNames: [],
      classLabels: ['x', 'y'],
      source: 'images',
      pixelScale: 255,
    };
    const p = fitNormalization('zscore', images, { indices: [0, 1] });
    assert.equal(p.mean!.length, 1);
    close(p.mean!, [5 / 8], 1e-12);
    close(p.std!, [Math.sqrt(5 / 8 - (5 / 8) ** 2)], 1e-12);
    assert.deepEqual(p.imageShape, [1, 2, 2]);
    assert.equal(p.pixelScale, 255);
    const minmax = fitNormalization('minmax', images);
    assert.deepEqual([minmax.min, minmax.max], [[0], [1]]);
    // Per feature on request.
    assert.equal(fitNormalization('zscore', images, { global: false }).mean!.length, 4);
    // Raw pixels (not scaled on load) are divided by the model's pixel scale first.
    const raw = { ...images, pixelScale: undefined, features: images.features.map((v) => v * 255) };
    close(applyNormalization(p, raw).features, Array.from(applyNormalization(p, images).features), 1e-5);
    const drawn = Float32Array.from([255, 0, 0, 255]);
    normalizeFeatures(p, drawn);
    close(drawn, [1, 0, 0, 1].map((v) => (v - 5 / 8) / p.std![0]), 1e-5);
  });

  test('mismatched data is refused', () => {
    const p = fitNormalization('zscore', all);
    assert.throws(() => applyNormalization(p, tabular([[1, 2, 3]])), /3 features per example, but the model was trained on 2/);
    assert.throws(() => fitNormalization('zscore', all, { indices: [] }), /empty training split/);
  });

  test('JSON round trip through the schema; invalid values are refused', () => {
    const encoded = { kind: 'zscore', featureCount: 2, mean: [2, 5], std: [1, 1] };
    const p = fitNormalization('zscore', all, { indices: trainIndices });
    assert.deepEqual(parsePreprocessing(JSON.parse(JSON.stringify(p))), p);
    assert.deepEqual(parsePreprocessing(encoded), encoded);
    assert.throws(() => parsePreprocessing({ kind: 'zscore', mean: [1] }), /needs "std"/);
    assert.throws(() => parsePreprocessing({ kind: 'zscore', featureCount: 2, mean: [1, 2, 3], std: [1, 1, 1] }), /3 entries, expected 1 or 2/);
    assert.throws(() => parsePreprocessing({ kind: 'zscore', mean: [1], std: [0] }), /std" must be positive/);
    assert.throws(() => parsePreprocessing({ kind: 'minmax', min: [1], max: [1] }), /must exceed "min"/);
    assert.throws(() => parsePreprocessing({ kind: 'l2' }), /kind/);
    assert.throws(() => parsePreprocessing({ kind: 'none', extra: 1 }), /extra/i);
    assert.equal(preprocessingSchema.safeParse({ kind: 'none' }).success, true);
  });

  test('the affine form gives the same values', () => {
    const p = fitNormalization('minmax', all, { indices: trainIndices });
    const { scale, shift } = normalizationAffine(p, 2);
    const direct = applyNormalization(p, all).features;
    for (let i = 0; i < all.features.length; i++) {
      close([all.features[i] * scale[i % 2] + shift[i % 2]], [direct[i]], 1e-4);
    }
  });
});
