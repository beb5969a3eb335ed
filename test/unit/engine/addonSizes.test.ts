// The addon's entry points check every size before touching memory: typed arrays against the spec's
// parameter count, input size and count * featureSize, resume state against the optimizer, batch sizes,
// and specs whose sizes overflow 32- or 64-bit arithmetic. Each wrong size is a clear TypeError,
// RangeError or engine error (code ERR_NNSTUDIO_*), never a crash. Called on the raw addon, bypassing the
// TypeScript wrapper's own checks.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as engine from '../../../app/engine';
import { native } from '../../../app/engine/native';
import { blobSpec, blobs } from './fixtures';

const specJson = JSON.stringify(blobSpec); // adam, 2 -> 8 -> 2: 42 parameters
const P = 42;
const data = blobs(32);

function startRaw(options: Record<string, unknown>, dataset: unknown = data, spec = specJson) {
  return native().startTraining(spec, dataset as engine.Dataset, null, { device: 'cpu', epochs: 2, batchSize: 8, ...options }, null, null);
}

function hostileSpec(input: number[], layers: unknown[]): string {
  return JSON.stringify({ input, layers, loss: 'softmax_cross_entropy', optimizer: { kind: 'sgd', lr: 0.1 }, seed: 0 });
}

const big = 2 ** 31 - 1;

describe('addon: sizes are validated before memory is touched', () => {
  test('specs whose sizes overflow int arithmetic are spec errors, not wrapped sizes', () => {
    const tooLargeInput = hostileSpec([big, big, big], [{ kind: 'flatten' }, { kind: 'dense', units: 2 }]);
    assert.throws(() => native().inferShapes(tooLargeInput), { code: 'ERR_NNSTUDIO_SPEC', message: /input: 2147483647x2147483647x2147483647 is too large/ });
    const fullKernel = hostileSpec([1, 8, 8], [{ kind: 'conv2d', filters: 2, kernel: [big, big], padding: 'full' }, { kind: 'flatten' }, { kind: 'dense', units: 2 }]);
    assert.throws(() => native().parameterTable(fullKernel), { code: 'ERR_NNSTUDIO_SPEC', message: /conv2d #1: output is too large/ });
    const hugeStride = hostileSpec([1, 8, 8], [{ kind: 'conv2d', filters: 2, kernel: [3, 3], stride: big, padding: 'same' }, { kind: 'flatten' }, { kind: 'dense', units: 2 }]);
    assert.equal(native().inferShapes(hugeStride)[0].outputShape.join('x'), '2x1x1'); // 64-bit arithmetic: a valid 1x1 output
    // 65536 x 65536 weights: refused, where it used to ask for 16 GiB of initial weights
    const hugeDense = hostileSpec([65536], [{ kind: 'dense', units: 65536 }]);
    assert.throws(() => native().initialParameters(hugeDense), { code: 'ERR_NNSTUDIO_SPEC', message: /dense #1: 4295032832 parameters is too many/ });
  });

  test('a dataset for a hostile spec is refused before its arrays are read', () => {
    const spec = hostileSpec([big, big, big], [{ kind: 'flatten' }, { kind: 'dense', units: 2 }]);
    assert.throws(() => startRaw({}, { features: new Float32Array(4), labels: new Int32Array(2) }, spec), { code: 'ERR_NNSTUDIO_SPEC' });
    assert.throws(() => native().evaluate(spec, new Float32Array(1), { features: new Float32Array(4), labels: new Int32Array(2) }, { device: 'cpu' }), {
      code: 'ERR_NNSTUDIO_SPEC',
    });
  });

  test('features and labels: count * featureSize, labels in range, views honour their offset', () => {
    assert.throws(() => startRaw({}, { features: new Float32Array(65), labels: data.labels }), {
      name: 'RangeError', message: 'train.features has 65 values but 32 labels x 2 features per sample (the spec\'s input) need 64',
    });
    const negative = data.labels.slice();
    negative[31] = -1;
    assert.throws(() => startRaw({}, { features: data.features, labels: negative }), { name: 'RangeError', message: /train\.labels\[31\] is -1/ });
    // a view into a larger buffer is read from its own offset (the addon must not read the whole buffer)
    const padded = new Float32Array(64 + 10);
    padded.set(data.features, 10);
    const view = { features: padded.subarray(10), labels: data.labels };
    assert.doesNotThrow(() => engine.evaluate(blobSpec, engine.initialParameters(blobSpec), view, { device: 'cpu' }));
  });

  test('batch sizes: positive, bounded, and larger than the data is clamped (no huge buffers)', async () => {
    const parameters = engine.initialParameters(blobSpec);
    assert.throws(() => native().evaluate(specJson, parameters, data, { device: 'cpu', batchSize: 0 }), { name: 'RangeError', message: /options\.batchSize must be between 1/ });
    assert.throws(() => native().evaluate(specJson, parameters, data, { device: 'cpu', batchSize: 2 ** 24 + 1 }), { name: 'RangeError' });
    assert.throws(() => startRaw({ batchSize: -1 }), { name: 'RangeError', message: /options\.batchSize/ });
    const evaluated = await native().evaluate(specJson, parameters, data, { device: 'cpu', batchSize: 2 ** 24 });
    assert.equal(evaluated.predictions.length, 32);
    const trained = await startRaw({ batchSize: 2 ** 31 - 1, epochs: 1 }).promise;
    assert.equal(trained.steps, 1);
  });

  test('counts far outside any integer type are refused quoting the number as given, not a wrapped cast', () => {
    const refused = (options: Record<string, unknown>, message: string) => assert.throws(() => startRaw(options), { name: 'RangeError', message });
    refused({ epochs: 1e20 }, 'options.epochs must be between 1 and 1000000 (got 100000000000000000000)');
    refused({ batchSize: 99999999999999999999 }, 'options.batchSize must be between 1 and 2147483647 (got 100000000000000000000)');
    refused({ epochs: -1e20 }, 'options.epochs must be between 1 and 1000000 (got -100000000000000000000)');
    refused({ batchSize: 2 ** 63 }, 'options.batchSize must be between 1 and 2147483647 (got 9223372036854775808)');
    refused({ threads: 1e300 }, 'options.threads must be between 0 and 4096 (got 1e+300)');
    refused({ seed: 1e20 }, 'options.seed must be between 0 and 9007199254740991 (got 100000000000000000000)');
    refused({ lrSchedule: { kind: 'step', everyEpochs: 1e20 } }, 'options.lrSchedule.everyEpochs must be between 1 and 1000000 (got 100000000000000000000)');
    refused({ earlyStopping: { monitor: 'trainLoss', patience: -1e300 } }, 'options.earlyStopping.patience must be between 1 and 1000000 (got -1e+300)');
    refused({ progressIntervalSeconds: 1e20 }, 'options.progressIntervalSeconds must be a number between 0 and 3600 (got 100000000000000000000)');
    assert.throws(() => native().evaluate(specJson, engine.initialParameters(blobSpec), data, { device: 'cpu', batchSize: 1e20 }), {
      name: 'RangeError', message: 'options.batchSize must be between 1 and 16777216 (got 100000000000000000000)',
    });
  });

  test('resume state: every array sized by the spec and the optimizer', async () => {
    const state = (overrides: Record<string, unknown>) => ({
      epoch: 1, step: 4, seed: '0', learningRate: 0.01,
      parameters: new Float32Array(P), optimizerState: new Float32Array(2 * P), history: [
        { epoch: 1, trainLoss: 0.5, trainAccuracy: 0.5, seconds: 0.1, learningRate: 0.01 },
      ],
      ...overrides,
    });
    const resume = (overrides: Record<string, unknown>) => () => startRaw({ seed: 0, resume: state(overrides) });
    assert.throws(resume({ parameters: new Float32Array(P - 1) }), { name: 'RangeError', message: 'options.resume.parameters has 41 values but the model has 42 parameters' });
    assert.throws(resume({ optimizerState: new Float32Array(P) }), { name: 'RangeError', message: 'options.resume.optimizerState has 42 values but the model has 84 parameters' });
    assert.throws(resume({ bestParameters: new Float32Array(2 * P) }), { name: 'RangeError', message: /options\.resume\.bestParameters has 84 values/ });
    assert.throws(resume({ parameters: new Float64Array(P) }), { name: 'TypeError', message: 'options.resume.parameters must be a Float32Array' });
    assert.throws(resume({ history: { length: 2 ** 31 } }), { name: 'TypeError', message: 'options.resume.history must be an array' });
    assert.throws(resume({ step: -1 }), { name: 'RangeError', message: /options\.resume\.step must be a non-negative integer/ });
    assert.throws(resume({ seed: '1'.repeat(21) }), { name: 'RangeError', message: /options\.resume\.seed must be a decimal integer/ });
    // sizes that fit the arrays but not the run: the engine's own check rejects the promise
    await assert.rejects(startRaw({ seed: 0, resume: state({ history: [] }) }).promise, { code: 'ERR_NNSTUDIO_ENGINE', message: /resume state: 0 epochs of history for 1 epochs/ });
    await assert.rejects(startRaw({ seed: 0, resume: state({ step: 3 }) }).promise, { code: 'ERR_NNSTUDIO_ENGINE', message: /resume state: 3 steps after 1 epochs/ });
    // the right sizes resume
    const resumed = await startRaw({ seed: 0, resume: state({}) }).promise;
    assert.equal(resumed.history.length, 2);
  });

  test('initial parameters and evaluation parameters: exactly the parameter count', () => {
    assert.throws(() => native().startTraining(specJson, data, null, { device: 'cpu' }, new Float32Array(P + 1), null), {
      name: 'RangeError', message: 'initialParameters has 43 values but the model has 42 parameters',
    });
    assert.throws(() => native().evaluate(specJson, new Float32Array(0), data, { device: 'cpu' }), { name: 'RangeError', message: /parameters has 0 values/ });
    assert.throws(() => native().evaluate(specJson, new Int32Array(P) as unknown as Float32Array, data, { device: 'cpu' }), { name: 'TypeError' });
  });
});
