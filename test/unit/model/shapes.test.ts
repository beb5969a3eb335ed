import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseModelSpec } from '../../../app/core/model/spec';
import type { LayerSpec, LossName, ModelSpec, PlainLayerSpec } from '../../../app/core/model/spec';
import {
  SpecError,
  classCount,
  inferShapes,
  inferShapesPartial,
  layerLabels,
  parameterCount,
  parameterTable,
} from '../../../app/core/model/shapes';
import { getPreset } from '../../../app/core/model/presets';

function spec(input: number[], layers: LayerSpec[], loss: LossName = 'softmax_cross_entropy'): ModelSpec {
  return parseModelSpec({ input, layers, loss, optimizer: { kind: 'sgd', lr: 0.1 }, seed: 0 });
}

type Row = [label: string, shape: number[], parameters: number, multiplyAdds: number];

function rows(model: ModelSpec): Row[] {
  return inferShapes(model).map((layer) => [layer.label, layer.outputShape, layer.parameters, layer.multiplyAdds]);
}

// ---- presets, worked by hand ----

describe('shape inference of every preset (hand-computed)', () => {
  test('seed000: conv 2x2x4 same twice, maxpool 4, dense 128 from 4*7*7 = 196 inputs', () => {
    const model = getPreset('seed000').spec;
    assert.deepEqual(rows(model), [
      ['conv2d #1', [4, 28, 28], 4 * 1 * 2 * 2 + 4, 28 * 28 * 4 * 1 * 2 * 2], // 20, 12 544
      ['conv2d #2', [4, 28, 28], 4 * 4 * 2 * 2 + 4, 28 * 28 * 4 * 4 * 2 * 2], // 68, 50 176
      ['maxpool2d #1', [4, 7, 7], 0, 0], // floor((28-4)/4)+1 = 7
      ['flatten #1', [196], 0, 0],
      ['dense #1', [128], 25_216, 196 * 128], // 196*128 + 128
      ['dense #2', [10], 1_290, 1_280],
    ]);
    assert.equal(parameterCount(model), 20 + 68 + 25_216 + 1_290); // 26 594
    assert.equal(classCount(model), 10);
  });

  test('seed001: conv 3x3x64 valid, maxpool 2, dense 10', () => {
    const model = getPreset('seed001').spec;
    assert.deepEqual(rows(model), [
      ['conv2d #1', [64, 26, 26], 640, 26 * 26 * 64 * 9], // 389 376
      ['maxpool2d #1', [64, 13, 13], 0, 0],
      ['flatten #1', [10_816], 0, 0],
      ['dense #1', [10], 108_170, 108_160],
    ]);
    assert.equal(parameterCount(model), 108_810);
  });

  test('seed001_256: 256 filters', () => {
    const model = getPreset('seed001_256').spec;
    assert.deepEqual(rows(model), [
      ['conv2d #1', [256, 26, 26], 2_560, 26 * 26 * 256 * 9], // 1 557 504
      ['maxpool2d #1', [256, 13, 13], 0, 0],
      ['flatten #1', [43_264], 0, 0],
      ['dense #1', [10], 432_650, 432_640],
    ]);
    assert.equal(parameterCount(model), 435_210);
  });

  test('seed002: conv 5x5x8 valid twice, maxpool 2, dense 128, dense 10', () => {
    const model = getPreset('seed002').spec;
    assert.deepEqual(rows(model), [
      ['conv2d #1', [8, 24, 24], 208, 24 * 24 * 8 * 25], // 115 200
      ['conv2d #2', [8, 20, 20], 1_608, 20 * 20 * 8 * 8 * 25], // 640 000
      ['maxpool2d #1', [8, 10, 10], 0, 0],
      ['flatten #1', [800], 0, 0],
      ['dense #1', [128], 102_528, 102_400],
      ['dense #2', [10], 1_290, 1_280],
    ]);
    assert.equal(parameterCount(model), 105_634);
  });

  test('mlp: 784*128+128 + 128*10+10 = 101 770', () => {
    const model = getPreset('mlp').spec;
    assert.deepEqual(rows(model), [
      ['flatten #1', [784], 0, 0],
      ['dense #1', [128], 100_480, 100_352],
      ['dense #2', [10], 1_290, 1_280],
    ]);
    assert.equal(parameterCount(model), 101_770);
  });

  test('keras_cnn: conv 3x3x32, conv 3x3x64, maxpool 2, dense 128, dense 10', () => {
    const model = getPreset('keras_cnn').spec;
    assert.deepEqual(rows(model), [
      ['conv2d #1', [32, 26, 26], 320, 26 * 26 * 32 * 9], // 194 688
      ['conv2d #2', [64, 24, 24], 18_496, 24 * 24 * 64 * 32 * 9], // 10 616 832
      ['maxpool2d #1', [64, 12, 12], 0, 0],
      ['flatten #1', [9_216], 0, 0],
      ['dense #1', [128], 1_179_776, 1_179_648],
      ['dense #2', [10], 1_290, 1_280],
    ]);
    assert.equal(parameterCount(model), 1_199_882);
  });

  test('lenet5: the classic 61 706 parameters', () => {
    const model = getPreset('lenet5').spec;
    assert.deepEqual(rows(model), [
      ['conv2d #1', [6, 28, 28], 156, 28 * 28 * 6 * 25], // 117 600
      ['avgpool2d #1', [6, 14, 14], 0, 0],
      ['conv2d #2', [16, 10, 10], 2_416, 10 * 10 * 16 * 6 * 25], // 240 000
      ['avgpool2d #2', [16, 5, 5], 0, 0],
      ['flatten #1', [400], 0, 0],
      ['dense #1', [120], 48_120, 48_000],
      ['dense #2', [84], 10_164, 10_080],
      ['dense #3', [10], 850, 840],
    ]);
    assert.equal(parameterCount(model), 61_706);
  });
});

// ---- padding and stride arithmetic ----

describe('conv and pool arithmetic', () => {
  const conv = (kernel: [number, number], stride: number, padding: 'valid' | 'same' | 'full'): LayerSpec => ({
    kind: 'conv2d',
    filters: 2,
    kernel,
    stride,
    padding,
  });
  const outHW = (input: number[], layer: LayerSpec) => inferShapes(spec(input, [layer, { kind: 'flatten' }, { kind: 'dense', units: 2 }]))[0].outputShape;

  test('same (TensorFlow): out = ceil(in / stride), also on odd sizes with stride 2', () => {
    assert.deepEqual(outHW([1, 7, 7], conv([3, 3], 2, 'same')), [2, 4, 4]);
    assert.deepEqual(outHW([1, 5, 7], conv([2, 2], 2, 'same')), [2, 3, 4]);
    assert.deepEqual(outHW([1, 28, 28], conv([2, 2], 1, 'same')), [2, 28, 28]);
    assert.deepEqual(outHW([1, 9, 9], conv([3, 3], 3, 'same')), [2, 3, 3]);
    // a kernel larger than the input is fine with same padding
    assert.deepEqual(outHW([1, 2, 2], conv([5, 5], 1, 'same')), [2, 2, 2]);
  });

  test('valid: out = floor((in - k) / stride) + 1', () => {
    assert.deepEqual(outHW([1, 7, 7], conv([3, 3], 2, 'valid')), [2, 3, 3]);
    assert.deepEqual(outHW([1, 8, 8], conv([3, 3], 2, 'valid')), [2, 3, 3]);
    assert.deepEqual(outHW([1, 5, 6], conv([3, 5], 1, 'valid')), [2, 3, 2]);
    assert.deepEqual(outHW([1, 4, 4], conv([4, 4], 3, 'valid')), [2, 1, 1]);
  });

  test('full: pads k-1 each side, out = floor((in + k - 2) / stride) + 1', () => {
    assert.deepEqual(outHW([1, 4, 4], conv([3, 3], 1, 'full')), [2, 6, 6]);
    assert.deepEqual(outHW([1, 5, 5], conv([3, 3], 2, 'full')), [2, 4, 4]); // (5+4-3)/2+1
    assert.deepEqual(outHW([1, 1, 1], conv([2, 3], 1, 'full')), [2, 2, 3]);
  });

  test('conv defaults: stride 1, padding valid', () => {
    const layer: LayerSpec = { kind: 'conv2d', filters: 3, kernel: [3, 3] };
    assert.deepEqual(outHW([2, 6, 6], layer), [3, 4, 4]);
    const info = inferShapes(spec([2, 6, 6], [layer, { kind: 'flatten' }, { kind: 'dense', units: 2 }]))[0];
    assert.equal(info.parameters, 3 * 2 * 3 * 3 + 3);
    assert.equal(info.multiplyAdds, 4 * 4 * 3 * 2 * 3 * 3);
  });

  test('pools: floor mode, stride defaults to the size', () => {
    assert.deepEqual(outHW([3, 7, 7], { kind: 'maxpool2d', size: 2 }), [3, 3, 3]);
    assert.deepEqual(outHW([3, 7, 7], { kind: 'maxpool2d', size: 3, stride: 2 }), [3, 3, 3]);
    assert.deepEqual(outHW([3, 5, 6], { kind: 'avgpool2d', size: 3, stride: 1 }), [3, 3, 4]);
    assert.deepEqual(outHW([3, 2, 2], { kind: 'avgpool2d', size: 2 }), [3, 1, 1]);
  });

  test('flatten keeps the element count and is a no-op on flat input; dropout and activation keep shapes', () => {
    const model = spec([12], [
      { kind: 'flatten' },
      { kind: 'dropout', rate: 0.5 },
      { kind: 'activation', fn: 'relu' },
      { kind: 'dense', units: 3, activation: 'relu' },
      { kind: 'activation', fn: 'softmax' },
    ]);
    assert.deepEqual(rows(model), [
      ['flatten #1', [12], 0, 0],
      ['dropout #1', [12], 0, 0],
      ['activation #1', [12], 0, 0],
      ['dense #1', [3], 39, 36],
      ['activation #2', [3], 0, 0],
    ]);
  });
});

// ---- errors ----

describe('spec errors name the layer by kind and ordinal', () => {
  const expectError = (model: ModelSpec, message: string, layerIndex: number | undefined) => {
    assert.throws(
      () => inferShapes(model),
      (error: unknown) => {
        assert.ok(error instanceof SpecError, 'a SpecError');
        assert.equal(error.message, message);
        assert.equal(error.layerIndex, layerIndex);
        return true;
      },
    );
  };

  test('kernel larger than the input with valid padding', () => {
    const model = spec([1, 8, 8], [
      { kind: 'conv2d', filters: 4, kernel: [5, 5] },
      { kind: 'conv2d', filters: 4, kernel: [5, 5], padding: 'valid' },
      { kind: 'flatten' },
      { kind: 'dense', units: 2 },
    ]);
    expectError(model, 'conv2d #2: kernel 5x5 larger than input 4x4 (padding valid)', 1);
    // only one side too large still fails
    expectError(
      spec([1, 8, 3], [{ kind: 'conv2d', filters: 1, kernel: [2, 4] }, { kind: 'flatten' }, { kind: 'dense', units: 2 }]),
      'conv2d #1: kernel 2x4 larger than input 8x3 (padding valid)',
      0,
    );
  });

  test('dense after an image without flatten', () => {
    const layers = getPreset('seed000').spec.layers.filter((layer) => layer.kind !== 'flatten');
    expectError(spec([1, 28, 28], layers), 'dense #1: needs a flat input, got 4x7x7 (add a flatten layer)', 3);
  });

  test('pool window larger than the input', () => {
    expectError(
      spec([2, 2, 2], [{ kind: 'maxpool2d', size: 3 }, { kind: 'flatten' }, { kind: 'dense', units: 2 }]),
      'maxpool2d #1: window 3x3 larger than input 2x2',
      0,
    );
    expectError(
      spec([1, 6, 6], [
        { kind: 'avgpool2d', size: 2 },
        { kind: 'avgpool2d', size: 4 },
        { kind: 'flatten' },
        { kind: 'dense', units: 2 },
      ]),
      'avgpool2d #2: window 4x4 larger than input 3x3',
      1,
    );
  });

  test('conv and pool on flat input', () => {
    expectError(spec([20], [{ kind: 'conv2d', filters: 2, kernel: [3, 3] }, { kind: 'dense', units: 2 }]), 'conv2d #1: needs an image input [C,H,W], got 20 (use it before flatten/dense)', 0);
    expectError(
      spec([1, 4, 4], [{ kind: 'flatten' }, { kind: 'maxpool2d', size: 2 }, { kind: 'dense', units: 2 }]),
      'maxpool2d #1: needs an image input [C,H,W], got 16 (use it before flatten/dense)',
      1,
    );
  });

  test('the head must be flat', () => {
    expectError(
      spec([1, 5, 5], [{ kind: 'conv2d', filters: 4, kernel: [3, 3] }]),
      'conv2d #1: the network must end with a flat output, got 4x3x3 (end with flatten and a dense layer)',
      0,
    );
  });

  test('softmax_cross_entropy needs at least 2 outputs; binary_cross_entropy and mse take one', () => {
    const layers: LayerSpec[] = [{ kind: 'dense', units: 4, activation: 'relu' }, { kind: 'dense', units: 1 }];
    expectError(
      spec([3], layers),
      'softmax_cross_entropy needs at least 2 outputs, the last layer dense #2 has 1 (use binary_cross_entropy for a single output)',
      undefined,
    );
    assert.equal(classCount(spec([3], layers, 'binary_cross_entropy')), 2);
    assert.equal(classCount(spec([3], layers, 'mse')), 2);
    assert.equal(classCount(spec([3], [{ kind: 'dense', units: 5 }], 'binary_cross_entropy')), 5);
  });

  test('softmax needs a flat tensor (as the engine)', () => {
    expectError(
      spec([1, 4, 4], [{ kind: 'conv2d', filters: 2, kernel: [3, 3], activation: 'softmax' }, { kind: 'flatten' }, { kind: 'dense', units: 2 }]),
      'conv2d #1: softmax needs a flat input, got 2x2x2 (add a flatten layer first)',
      0,
    );
    expectError(
      spec([1, 4, 4], [{ kind: 'activation', fn: 'relu' }, { kind: 'activation', fn: 'softmax' }, { kind: 'flatten' }, { kind: 'dense', units: 2 }]),
      'activation #2: softmax needs a flat input, got 1x4x4 (add a flatten layer first)',
      1,
    );
    assert.doesNotThrow(() => inferShapes(spec([1, 4, 4], [{ kind: 'flatten' }, { kind: 'dense', units: 2, activation: 'softmax' }, { kind: 'activation', fn: 'softmax' }])));
  });

  test('a layer output of 2^31 elements or more is refused (as the engine)', () => {
    expectError(
      spec([1, 40_000, 40_000], [{ kind: 'conv2d', filters: 2, kernel: [1, 1] }, { kind: 'flatten' }, { kind: 'dense', units: 2 }]),
      'conv2d #1: output 2x40000x40000 is too large',
      0,
    );
  });

  test('an input of 2^31 values, or a layer of 2^31 parameters, is refused (as the engine)', () => {
    const input = inferShapesPartial(spec([1, 50_000, 50_000], [{ kind: 'flatten' }, { kind: 'dense', units: 2 }]));
    assert.equal(input.error?.message, 'input: 1x50000x50000 is too large (2^31 values or more per sample)');
    assert.deepEqual(input.layers, []);
    expectError(spec([65536], [{ kind: 'dense', units: 65536 }]), 'dense #1: 4295032832 parameters is too many (2^31 or more in one layer)', 0);
  });

  test('inferShapesPartial keeps the layers before the error', () => {
    const report = inferShapesPartial(
      spec([1, 4, 4], [{ kind: 'conv2d', filters: 2, kernel: [3, 3] }, { kind: 'maxpool2d', size: 3 }, { kind: 'flatten' }, { kind: 'dense', units: 2 }]),
    );
    assert.deepEqual(report.layers.map((layer) => layer.outputShape), [[2, 2, 2]]);
    assert.equal(report.error?.message, 'maxpool2d #1: window 3x3 larger than input 2x2');
    assert.equal(report.error?.layerIndex, 1);
    assert.equal(inferShapesPartial(getPreset('mlp').spec).error, undefined);
  });

  test('labels count per kind', () => {
    assert.deepEqual(
      layerLabels([
        { kind: 'conv2d', filters: 1, kernel: [1, 1] },
        { kind: 'activation', fn: 'relu' },
        { kind: 'conv2d', filters: 1, kernel: [1, 1] },
        { kind: 'maxpool2d', size: 1 },
        { kind: 'avgpool2d', size: 1 },
        { kind: 'maxpool2d', size: 1 },
      ]),
      ['conv2d #1', 'activation #1', 'conv2d #2', 'maxpool2d #1', 'avgpool2d #1', 'maxpool2d #2'],
    );
  });
});

// ---- parameter table ----

describe('parameterTable', () => {
  test('weight then bias per layer in spec order, offsets contiguous (seed000)', () => {
    const table = parameterTable(getPreset('seed000').spec);
    assert.deepEqual(table, [
      { name: 'layers.0.weight', shape: [4, 1, 2, 2], offset: 0, size: 16 },
      { name: 'layers.0.bias', shape: [4], offset: 16, size: 4 },
      { name: 'layers.1.weight', shape: [4, 4, 2, 2], offset: 20, size: 64 },
      { name: 'layers.1.bias', shape: [4], offset: 84, size: 4 },
      { name: 'layers.4.weight', shape: [128, 196], offset: 88, size: 25_088 },
      { name: 'layers.4.bias', shape: [128], offset: 25_176, size: 128 },
      { name: 'layers.5.weight', shape: [10, 128], offset: 25_304, size: 1_280 },
      { name: 'layers.5.bias', shape: [10], offset: 26_584, size: 10 },
    ]);
    assert.equal(table[table.length - 1].offset + table[table.length - 1].size, parameterCount(getPreset('seed000').spec));
  });

  test('dense on a flattened image reads the flattened width; dense is (units, inputs)', () => {
    const table = parameterTable(getPreset('mlp').spec);
    assert.deepEqual(table.map((t) => [t.name, t.shape]), [
      ['layers.1.weight', [128, 784]],
      ['layers.1.bias', [128]],
      ['layers.2.weight', [10, 128]],
      ['layers.2.bias', [10]],
    ]);
  });

  test('an invalid spec throws the SpecError', () => {
    assert.throws(() => parameterTable(spec([20], [{ kind: 'maxpool2d', size: 2 }, { kind: 'dense', units: 2 }])), SpecError);
  });
});

describe('batchnorm, global_avgpool, gelu', () => {
  test('batchnorm keeps the shape and counts 4C (2C not affine); gap gives [C]; gelu is an activation', () => {
    const model = spec([3, 8, 6], [
      { kind: 'conv2d', filters: 4, kernel: [3, 3], padding: 'same', activation: 'gelu' },
      { kind: 'batchnorm' },
      { kind: 'global_avgpool' },
      { kind: 'batchnorm', affine: false, momentum: 0.5, eps: 0.01 },
      { kind: 'dense', units: 5, activation: 'gelu' },
      { kind: 'dense', units: 2 },
    ]);
    assert.deepEqual(rows(model), [
      ['conv2d #1', [4, 8, 6], 112, 48 * 108],
      ['batchnorm #1', [4, 8, 6], 16, 0],
      ['global_avgpool #1', [4], 0, 0],
      ['batchnorm #2', [4], 8, 0],
      ['dense #1', [5], 25, 20],
      ['dense #2', [2], 12, 10],
    ]);
    assert.deepEqual(parameterTable(model).map((t) => [t.name, t.shape, t.offset]), [
      ['layers.0.weight', [4, 3, 3, 3], 0],
      ['layers.0.bias', [4], 108],
      ['layers.1.gamma', [4], 112],
      ['layers.1.beta', [4], 116],
      ['layers.1.running_mean', [4], 120],
      ['layers.1.running_var', [4], 124],
      ['layers.3.running_mean', [4], 128],
      ['layers.3.running_var', [4], 132],
      ['layers.4.weight', [5, 4], 136],
      ['layers.4.bias', [5], 156],
      ['layers.5.weight', [2, 5], 161],
      ['layers.5.bias', [2], 171],
    ]);
    assert.equal(parameterCount(model), 173);
  });

  test('global_avgpool needs an image; batchnorm options are checked by the schema', () => {
    const report = inferShapesPartial(spec([6], [{ kind: 'global_avgpool' }, { kind: 'dense', units: 2 }]));
    assert.equal(report.error?.message, 'global_avgpool #1: needs an image input [C,H,W], got 6 (use it before flatten/dense)');
    assert.throws(() => spec([6], [{ kind: 'batchnorm', momentum: 1.5 }, { kind: 'dense', units: 2 }]), /momentum/);
    assert.throws(() => spec([6], [{ kind: 'batchnorm', eps: 0 }, { kind: 'dense', units: 2 }]), /eps/);
  });
});

describe('residual blocks', () => {
  const conv = (filters: number, stride = 1, activation?: 'relu'): PlainLayerSpec =>
    ({ kind: 'conv2d', filters, kernel: [3, 3], stride, padding: 'same', ...(activation ? { activation } : {}) });

  test('a block counts its layers and its projection; identity blocks have no tensors of their own', () => {
    const model = spec([4, 9, 9], [
      { kind: 'residual', layers: [conv(8, 1, 'relu'), conv(8)] },
      { kind: 'residual', shortcut: 'auto', layers: [conv(8, 2), { kind: 'batchnorm' }] },
      { kind: 'residual', layers: [conv(8), { kind: 'activation', fn: 'relu' }] },
      { kind: 'global_avgpool' },
      { kind: 'dense', units: 2 },
    ]);
    // the engine's figures (native/tests/test_spec.cpp)
    assert.deepEqual(rows(model).slice(0, 2), [
      ['residual #1', [8, 9, 9], (8 * 4 * 9 + 8) + (8 * 8 * 9 + 8) + (8 * 4 + 8), 81 * (8 * 4 * 9 + 8 * 8 * 9 + 8 * 4)],
      ['residual #2', [8, 5, 5], (8 * 8 * 9 + 8) + 4 * 8 + (8 * 8 + 8), 25 * (8 * 8 * 9 + 8 * 8)],
    ]);
    const infos = inferShapes(model);
    assert.deepEqual(infos[0].block?.shortcut, { kind: 'projection', stride: 1, parameters: 40 });
    assert.deepEqual(infos[1].block?.shortcut, { kind: 'projection', stride: 2, parameters: 72 });
    assert.deepEqual(infos[2].block?.shortcut, { kind: 'identity' });
    assert.equal(infos[0].block?.layers[1].label, 'layer 1 (residual), its layer 2 (conv2d)');
    assert.deepEqual(infos[1].block?.layers.map((l) => l.outputShape), [[8, 5, 5], [8, 5, 5]]);
    const names = parameterTable(model).map((t) => `${t.name}:${t.shape.join('x')}`);
    assert.deepEqual(names.slice(0, 6), [
      'layers.0.layers.0.weight:8x4x3x3', 'layers.0.layers.0.bias:8', 'layers.0.layers.1.weight:8x8x3x3',
      'layers.0.layers.1.bias:8', 'layers.0.shortcut.weight:8x4x1x1', 'layers.0.shortcut.bias:8',
    ]);
    assert.ok(names.includes('layers.1.layers.1.running_var:8'));
    assert.ok(!names.some((name) => name.startsWith('layers.2.shortcut')));
    const table = parameterTable(model);
    const last = table[table.length - 1];
    assert.equal(parameterCount(model), last.offset + last.size);
  });

  test('errors inside a block name the block and its layer; a shape the shortcut cannot follow names the block', () => {
    const inner = inferShapesPartial(spec([4], [
      { kind: 'dense', units: 4 },
      { kind: 'residual', layers: [{ kind: 'dense', units: 4 }, { kind: 'maxpool2d', size: 2 }] },
      { kind: 'dense', units: 2 },
    ]));
    assert.equal(inner.error?.message, 'layer 2 (residual), its layer 2 (maxpool2d): needs an image input [C,H,W], got 4 (use it before flatten/dense)');
    assert.equal(inner.error?.layerIndex, 1);
    assert.equal(inner.error?.innerIndex, 1);
    assert.equal(inner.layers.length, 1);
    const flat = inferShapesPartial(spec([4], [{ kind: 'residual', layers: [{ kind: 'dense', units: 3 }] }, { kind: 'dense', units: 2 }]));
    assert.equal(flat.error?.message, 'residual #1: its layers turn 4 into 3: a shortcut that changes the shape needs an image on both sides (a flat block must keep its width)');
    assert.equal(flat.error?.innerIndex, undefined);
    const stride = inferShapesPartial(spec([2, 4, 4], [
      { kind: 'residual', layers: [{ kind: 'conv2d', filters: 2, kernel: [2, 2] }] }, { kind: 'flatten' }, { kind: 'dense', units: 2 },
    ]));
    assert.equal(stride.error?.message, 'residual #1: its layers turn 2x4x4 into 2x3x3: no stride of a 1x1 convolution maps 4x4 to 3x3');
    assert.throws(() => spec([4], [{ kind: 'residual', layers: [] } as unknown as LayerSpec, { kind: 'dense', units: 2 }]), /layers/);
    assert.throws(() => spec([4], [{ kind: 'residual', layers: [{ kind: 'residual', layers: [{ kind: 'dense', units: 4 }] }] } as unknown as LayerSpec, { kind: 'dense', units: 2 }]));
  });
});
