// Seeded stratified splits: proportions per class, determinism, disjointness and coverage, tiny classes.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Dataset } from '../../../app/core/data/dataset';
import { mulberry32, splitDataset, stratifiedSplit, subset } from '../../../app/core/data/split';

/** Labels with `sizes[c]` examples of class c, interleaved. */
function labelsOf(sizes: number[]): Int32Array {
  const labels: number[] = [];
  const left = [...sizes];
  while (left.some((n) => n > 0)) left.forEach((n, c) => { if (n > 0) { labels.push(c); left[c]--; } });
  return Int32Array.from(labels);
}

const countsIn = (labels: Int32Array, indices: Int32Array, classes: number) => {
  const counts = new Array<number>(classes).fill(0);
  for (const index of indices) counts[labels[index]]++;
  return counts;
};

describe('stratified split', () => {
  test('mulberry32 is the reference generator', () => {
    const random = mulberry32(42);
    // First outputs of the C reference (state += 0x6D2B79F5; …) for seed 42, as 32-bit integers.
    assert.deepEqual([random(), random(), random()].map((x) => Math.round(x * 4294967296)), [2581720956, 1925393290, 3661312704]);
  });

  test('each class is split in proportion; totals match the fractions', () => {
    const labels = labelsOf([500, 300, 200]);
    const split = stratifiedSplit(labels, { validation: 0.1, test: 0.2 }, 7);
    assert.equal(split.test.length, 200);
    assert.equal(split.validation.length, 100);
    assert.equal(split.train.length, 700);
    assert.deepEqual(countsIn(labels, split.test, 3), [100, 60, 40]);
    assert.deepEqual(countsIn(labels, split.validation, 3), [50, 30, 20]);
    assert.deepEqual(countsIn(labels, split.train, 3), [350, 210, 140]);
  });

  test('disjoint, covering every index once, ascending', () => {
    const labels = labelsOf([37, 11, 52, 3]);
    const split = stratifiedSplit(labels, { validation: 0.15, test: 0.15 }, 123);
    const all = [...split.train, ...split.validation, ...split.test].sort((a, b) => a - b);
    assert.deepEqual(all, Array.from({ length: labels.length }, (_, i) => i));
    for (const part of [split.train, split.validation, split.test]) {
      for (let i = 1; i < part.length; i++) assert.ok(part[i - 1] < part[i]);
    }
    // Proportions per class within one example of the ideal.
    const sizes = [37, 11, 52, 3];
    countsIn(labels, split.test, 4).forEach((n, c) => assert.ok(Math.abs(n - sizes[c] * 0.15) <= 1, `class ${c}: ${n}`));
  });

  test('deterministic by seed; another seed gives another split', () => {
    const labels = labelsOf([100, 100]);
    const a = stratifiedSplit(labels, { validation: 0.2, test: 0.1 }, 1);
    const b = stratifiedSplit(labels, { validation: 0.2, test: 0.1 }, 1);
    const c = stratifiedSplit(labels, { validation: 0.2, test: 0.1 }, 2);
    assert.deepEqual(a, b);
    assert.notDeepEqual(Array.from(a.test), Array.from(c.test));
  });

  test('fraction 0 gives an empty split', () => {
    const labels = labelsOf([10, 10]);
    const split = stratifiedSplit(labels, { validation: 0, test: 0 }, 3);
    assert.equal(split.validation.length, 0);
    assert.equal(split.test.length, 0);
    assert.equal(split.train.length, 20);
    const onlyTest = stratifiedSplit(labels, { validation: 0, test: 0.5 }, 3);
    assert.equal(onlyTest.validation.length, 0);
    assert.deepEqual(countsIn(labels, onlyTest.test, 2), [5, 5]);
  });

  test('tiny classes keep an example for training', () => {
    const labels = labelsOf([1, 2, 50]);
    const split = stratifiedSplit(labels, { validation: 0.3, test: 0.3 }, 9);
    const train = countsIn(labels, split.train, 3);
    assert.equal(train[0], 1, 'a single example goes to training');
    assert.ok(train[1] >= 1);
    assert.equal(split.train.length + split.validation.length + split.test.length, 53);
  });

  test('bad fractions are refused', () => {
    const labels = labelsOf([5, 5]);
    assert.throws(() => stratifiedSplit(labels, { validation: 0.5, test: 0.5 }, 1), /nothing for training/);
    assert.throws(() => stratifiedSplit(labels, { validation: -0.1, test: 0 }, 1), /validation fraction/);
    assert.throws(() => stratifiedSplit(labels, { train: 0.5, validation: 0.1, test: 0.1 }, 1), /sum to 1/);
  });

  test('subset and splitDataset copy the chosen rows, and their file names', () => {
    const dataset: Dataset = {
      features: Float32Array.from([0, 0, 1, 1, 2, 2, 3, 3]),
      labels: Int32Array.from([0, 1, 0, 1]),
      count: 4,
      featureShape: [2],
      featureNames: ['a', 'b'],
      classLabels: ['x', 'y'],
      source: 'mem',
    };
    const picked = subset(dataset, [3, 1]);
    assert.deepEqual(Array.from(picked.features), [3, 3, 1, 1]);
    assert.deepEqual(Array.from(picked.labels), [1, 1]);
    assert.equal(picked.count, 2);
    assert.equal(picked.exampleNames, undefined, 'no names where the data had none');
    const named = subset({ ...dataset, exampleNames: ['a.png', 'b.png', 'c.png', 'd.png'] }, [3, 1]);
    assert.deepEqual(named.exampleNames, ['d.png', 'b.png'], "an image folder's file names follow their rows");
    const parts = splitDataset(dataset, { validation: 0, test: 0.5 }, 4);
    assert.equal(parts.train.count, 2);
    assert.equal(parts.test.count, 2);
    assert.deepEqual(countsIn(dataset.labels, parts.indices.test, 2), [1, 1]);
  });
});
