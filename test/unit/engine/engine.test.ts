// The typed engine API over the native addon: devices, shapes, validation, evaluation, determinism.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ModelSpec } from '../../../app/core/model/spec';
import * as coreShapes from '../../../app/core/model/shapes';
import { listPresets } from '../../../app/core/model/presets';
import * as engine from '../../../app/engine';
import { native } from '../../../app/engine/native';
import { binaryBlobSpec, blobSpec, blobs, quadrantImages, quadrantSpec } from './fixtures';

const badConvSpec: ModelSpec = {
  input: [1, 4, 4],
  layers: [
    { kind: 'conv2d', filters: 2, kernel: [3, 3] },
    { kind: 'conv2d', filters: 2, kernel: [5, 5] },
    { kind: 'flatten' },
    { kind: 'dense', units: 2 },
  ],
  loss: 'softmax_cross_entropy',
  optimizer: { kind: 'sgd', lr: 0.1 },
  seed: 0,
};

describe('devices', () => {
  test('listDevices puts the CPU first', () => {
    const devices = engine.listDevices();
    assert.ok(devices.length >= 1);
    const cpu = devices[0];
    assert.equal(cpu.kind, 'cpu');
    assert.equal(cpu.index, 0);
    assert.equal(typeof cpu.name, 'string');
    assert.ok(cpu.threads !== undefined && cpu.threads >= 1);
    for (const gpu of devices.slice(1)) {
      assert.equal(gpu.kind, 'cuda');
      assert.match(gpu.computeCapability ?? '', /^\d+\.\d+$/);
      assert.ok(gpu.memoryBytes > 0);
    }
    assert.equal(engine.cudaAvailable(), devices.some((device) => device.kind === 'cuda'));
  });

  test('resolveDevice', () => {
    assert.equal(engine.resolveDevice('cpu'), 'cpu');
    assert.equal(engine.resolveDevice('auto'), engine.cudaAvailable() ? 'cuda' : 'cpu');
    assert.throws(() => engine.resolveDevice('tpu' as engine.DeviceChoice), TypeError);
    if (engine.cudaAvailable()) {
      assert.equal(engine.resolveDevice('cuda'), 'cuda');
    } else {
      assert.throws(() => engine.resolveDevice('cuda'), /no CUDA device is available; use --device cpu/);
    }
  });

  test('training on cuda without a GPU fails clearly', { skip: engine.cudaAvailable() && 'a GPU is present' }, async () => {
    const data = blobs(64);
    assert.throws(() => engine.train(blobSpec, data, null, { epochs: 1, batchSize: 16, device: 'cuda' }), /no CUDA device/);
    // The raw addon, bypassing resolveDevice: the engine's own error rejects the promise.
    const handle = native().startTraining(JSON.stringify(blobSpec), data, null, { device: 'cuda' }, null, null);
    await assert.rejects(handle.promise, /no CUDA device/);
  });
});

describe('shapes and parameters', () => {
  test('inferShapes and parameterTable agree with app/core for every preset', () => {
    const presets = listPresets();
    assert.ok(presets.length > 0);
    for (const preset of [...presets.map((p) => p.spec), blobSpec, binaryBlobSpec, quadrantSpec]) {
      const expected = coreShapes.inferShapes(preset).map(({ label, outputShape, parameters, multiplyAdds }) => ({
        label,
        outputShape,
        parameters,
        multiplyAdds,
      }));
      assert.deepEqual(engine.inferShapes(preset), expected);
      assert.deepEqual(engine.parameterTable(preset), coreShapes.parameterTable(preset));
    }
  });

  test('initialParameters: sized by the table, seeded, biases zero', () => {
    const table = engine.parameterTable(quadrantSpec);
    const last = table[table.length - 1];
    const parameters = engine.initialParameters(quadrantSpec);
    assert.ok(parameters instanceof Float32Array);
    assert.equal(parameters.length, last.offset + last.size);
    assert.deepEqual(engine.initialParameters(quadrantSpec), parameters);
    assert.notDeepEqual(engine.initialParameters(quadrantSpec, quadrantSpec.seed + 1), parameters);
    for (const tensor of table.filter((t) => t.name.endsWith('.bias'))) {
      assert.ok(parameters.subarray(tensor.offset, tensor.offset + tensor.size).every((value) => value === 0));
    }
    assert.ok(parameters.some((value) => value !== 0));
  });

  test('an invalid spec throws the engine message naming the layer', () => {
    const expectLayerError = (run: () => unknown) =>
      assert.throws(run, (error: Error & { code?: string }) => {
        assert.match(error.message, /conv2d #2/);
        assert.match(error.message, /5x5/);
        assert.equal(error.code, 'ERR_NNSTUDIO_SPEC');
        return true;
      });
    expectLayerError(() => engine.inferShapes(badConvSpec));
    expectLayerError(() => engine.parameterTable(badConvSpec));
    expectLayerError(() => engine.initialParameters(badConvSpec));
    expectLayerError(() => engine.train(badConvSpec, quadrantImages(8), null, { epochs: 1, batchSize: 4, device: 'cpu' }));
    expectLayerError(() => engine.evaluate(badConvSpec, new Float32Array(1), quadrantImages(8), { device: 'cpu' }));
  });

  test('malformed JSON is a spec error', () => {
    assert.throws(() => native().inferShapes('{"input": [2], "layers": ['), { code: 'ERR_NNSTUDIO_SPEC' });
    assert.throws(() => native().inferShapes(42 as unknown as string), TypeError);
  });
});

describe('argument validation', () => {
  const data = blobs(32);
  const options: engine.TrainOptions = { epochs: 1, batchSize: 8, device: 'cpu' };

  test('features length must be count x the input size', () => {
    const short = { features: data.features.subarray(1), labels: data.labels };
    assert.throws(() => engine.train(blobSpec, short, null, options), (error: Error) => {
      assert.ok(error instanceof RangeError);
      assert.match(error.message, /train\.features has 63 values but 32 labels x 2 features/);
      return true;
    });
    assert.throws(() => engine.train(blobSpec, data, short, options), /validation\.features/);
    assert.throws(() => engine.evaluate(blobSpec, engine.initialParameters(blobSpec), short), /data\.features/);
  });

  test('typed arrays of the wrong kind are TypeErrors', () => {
    const float64 = { features: new Float64Array(64), labels: data.labels } as unknown as engine.Dataset;
    assert.throws(() => engine.train(blobSpec, float64, null, options), /train\.features must be a Float32Array/);
    const floatLabels = { features: data.features, labels: new Float32Array(32) } as unknown as engine.Dataset;
    assert.throws(() => engine.train(blobSpec, floatLabels, null, options), /train\.labels must be an Int32Array/);
    assert.throws(() => engine.train(blobSpec, null as unknown as engine.Dataset, null, options), TypeError);
  });

  test('labels outside the classes the model predicts', () => {
    const labels = data.labels.slice();
    labels[5] = 2;
    assert.throws(
      () => engine.train(blobSpec, { features: data.features, labels }, null, options),
      /train\.labels\[5\] is 2 but the model predicts 2 classes/,
    );
    assert.throws(() => engine.train(blobSpec, { features: new Float32Array(0), labels: new Int32Array(0) }, null, options), /no samples/);
  });

  test('options are checked', () => {
    assert.throws(() => engine.train(blobSpec, data, null, { ...options, epochs: 0 }), /options\.epochs must be between 1/);
    assert.throws(() => engine.train(blobSpec, data, null, { ...options, batchSize: 2.5 }), /options\.batchSize must be an integer/);
    assert.throws(() => engine.train(blobSpec, data, null, { ...options, seed: -1 }), /options\.seed/);
    assert.throws(() => engine.train(blobSpec, data, null, { ...options, shuffle: 'yes' as unknown as boolean }), /options\.shuffle must be a boolean/);
    assert.throws(
      () => native().startTraining(JSON.stringify(blobSpec), data, null, { device: 'gpu' as 'cpu' }, null, null),
      /options\.device must be 'cpu' or 'cuda'/,
    );
    assert.throws(
      () => native().startTraining(JSON.stringify(blobSpec), data, null, {}, null, 'not a function' as unknown as null),
      /onEvent must be a function/,
    );
  });

  test('parameter vectors must match the model', () => {
    const wrong = new Float32Array(3);
    assert.throws(() => engine.evaluate(blobSpec, wrong, data, { device: 'cpu' }), /parameters has 3 values but the model has 42 parameters/);
    assert.throws(
      () => engine.train(blobSpec, data, null, { ...options, initialParameters: wrong }),
      /initialParameters has 3 values but the model has 42/,
    );
  });
});

describe('evaluate', () => {
  test('softmax head: predictions, probabilities summing to 1, accuracy after training', async () => {
    const data = quadrantImages(400);
    const run = engine.train(quadrantSpec, data, null, { epochs: 20, batchSize: 16, seed: 1, threads: 2, device: 'cpu' });
    const trained = await run.promise;
    assert.equal(trained.status, 'completed');

    const result = await engine.evaluate(quadrantSpec, trained.parameters, data, { batchSize: 64, device: 'cpu' });
    assert.equal(result.classes, 4);
    assert.ok(result.predictions instanceof Int32Array);
    assert.ok(result.probabilities instanceof Float32Array);
    assert.equal(result.predictions.length, 400);
    assert.equal(result.probabilities.length, 400 * 4);
    let correct = 0;
    for (let i = 0; i < 400; i++) {
      const row = Array.from(result.probabilities.subarray(i * 4, i * 4 + 4));
      const sum = row.reduce((a, b) => a + b, 0);
      assert.ok(Math.abs(sum - 1) < 1e-5, `row ${i} sums to ${sum}`);
      assert.ok(row.every((p) => p >= 0 && p <= 1));
      assert.equal(result.predictions[i], row.indexOf(Math.max(...row)));
      if (result.predictions[i] === data.labels[i]) correct++;
    }
    assert.ok(Math.abs(result.accuracy - correct / 400) < 1e-9);
    assert.ok(result.accuracy > 0.9, `accuracy ${result.accuracy}`);
    assert.ok(Number.isFinite(result.loss) && result.loss >= 0);
  });

  test('single sigmoid output: two classes, rows [1-p, p]', async () => {
    const data = blobs(200);
    const result = await engine.evaluate(binaryBlobSpec, engine.initialParameters(binaryBlobSpec), data, { device: 'cpu' });
    assert.equal(result.classes, 2);
    assert.equal(result.probabilities.length, 400);
    for (let i = 0; i < 200; i++) {
      const p0 = result.probabilities[2 * i];
      const p1 = result.probabilities[2 * i + 1];
      assert.ok(Math.abs(p0 + p1 - 1) < 1e-6);
      assert.equal(result.predictions[i], p1 >= 0.5 ? 1 : 0);
    }
  });

  test('evaluate runs off the main thread', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    try {
      const pending = engine.evaluate(blobSpec, engine.initialParameters(blobSpec), blobs(64), { device: 'cpu' });
      assert.ok(pending instanceof Promise);
      const result = await pending;
      assert.equal(result.predictions.length, 64);
    } finally {
      clearInterval(timer);
    }
  });
});

describe('determinism', () => {
  const data = blobs(256);
  const options: engine.TrainOptions = { epochs: 2, batchSize: 16, seed: 42, threads: 2, device: 'cpu' };

  test('the same seed gives identical weights', async () => {
    const first = await engine.train(blobSpec, data, null, options).promise;
    const second = await engine.train(blobSpec, data, null, options).promise;
    assert.equal(first.status, 'completed');
    assert.deepEqual(second.parameters, first.parameters);
    assert.deepEqual(
      second.history.map((epoch) => epoch.trainLoss),
      first.history.map((epoch) => epoch.trainLoss),
    );
    const reshuffled = await engine.train(blobSpec, data, null, { ...options, seed: 43 }).promise;
    assert.notDeepEqual(reshuffled.parameters, first.parameters);
  });

  test('initialParameters start the run where given', async () => {
    // A learning rate far below float32 resolution: every step leaves the weights as they were.
    const frozen: ModelSpec = { ...blobSpec, optimizer: { kind: 'sgd', lr: 1e-30 } };
    // Non-zero biases too: 0 - 1e-30 * gradient would be a (tiny) change.
    const start = engine.initialParameters(frozen, 99).map((value) => (value === 0 ? 0.25 : value));
    assert.notDeepEqual(start, engine.initialParameters(frozen));
    const result = await engine.train(frozen, data, null, { ...options, initialParameters: start }).promise;
    assert.equal(result.status, 'completed');
    assert.equal(result.steps, 2 * 16);
    assert.deepEqual(result.parameters, start);
  });
});
