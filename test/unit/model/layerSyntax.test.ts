import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  LayerSyntaxError,
  formatLayer,
  formatLayers,
  isCourseLayers,
  parseCourseLayers,
  parseLayers,
} from '../../../app/core/model/layerSyntax';
import { listPresets } from '../../../app/core/model/presets';
import { inferShapes } from '../../../app/core/model/shapes';
import { parseModelSpec } from '../../../app/core/model/spec';

const image: number[] = [1, 28, 28];

describe('parseLayers', () => {
  test('conv, pool and dense with an automatic flatten', () => {
    assert.deepEqual(parseLayers('conv:8x3:relu,maxpool:2,dense:10', image), [
      { kind: 'conv2d', filters: 8, kernel: [3, 3], stride: 1, padding: 'valid', activation: 'relu' },
      { kind: 'maxpool2d', size: 2, stride: 2 },
      { kind: 'flatten' },
      { kind: 'dense', units: 10 },
    ]);
  });

  test('the result is a valid spec whose shapes infer', () => {
    const layers = parseLayers('conv:8x3:same:relu,maxpool:2,conv:16x3:relu,avgpool:2,dense:64:relu,dropout:0.5,dense:10', image);
    const spec = parseModelSpec({ input: image, layers, loss: 'softmax_cross_entropy', optimizer: { kind: 'adam', lr: 0.001 }, seed: 0 });
    assert.deepEqual(inferShapes(spec).map((layer) => layer.outputShape), [
      [8, 28, 28], [8, 14, 14], [16, 12, 12], [16, 6, 6], [576], [64], [64], [10],
    ]);
  });

  test('no flatten is inserted for flat input or after an explicit flatten', () => {
    assert.deepEqual(parseLayers('dense:16:tanh,dense:3', [4]), [
      { kind: 'dense', units: 16, activation: 'tanh' },
      { kind: 'dense', units: 3 },
    ]);
    assert.deepEqual(parseLayers('flatten,dense:3', image), [{ kind: 'flatten' }, { kind: 'dense', units: 3 }]);
    // only once: the second dense already sees a flat tensor
    assert.equal(parseLayers('dense:5,dense:3', image).filter((layer) => layer.kind === 'flatten').length, 1);
  });

  test('conv options in any order: padding, stride, activation with alpha', () => {
    assert.deepEqual(parseLayers('conv:32x3x5:same:s2:leaky_relu:0.2', image)[0], {
      kind: 'conv2d', filters: 32, kernel: [3, 5], stride: 2, padding: 'same', activation: 'leaky_relu', alpha: 0.2,
    });
    assert.deepEqual(parseLayers('conv:4x2:relu:s3:full', image)[0], {
      kind: 'conv2d', filters: 4, kernel: [2, 2], stride: 3, padding: 'full', activation: 'relu',
    });
    assert.deepEqual(parseLayers('conv2d:4x2:leaky_relu:same', image)[0], {
      kind: 'conv2d', filters: 4, kernel: [2, 2], stride: 1, padding: 'same', activation: 'leaky_relu',
    });
  });

  test('dense activations, pools, dropout and activation layers', () => {
    assert.deepEqual(parseLayers('dense:64:leaky_relu:0.2,leaky_relu,leaky_relu:0.1,sigmoid,tanh,softplus,softmax,linear,relu', [8]), [
      { kind: 'dense', units: 64, activation: 'leaky_relu', alpha: 0.2 },
      { kind: 'activation', fn: 'leaky_relu' },
      { kind: 'activation', fn: 'leaky_relu', alpha: 0.1 },
      { kind: 'activation', fn: 'sigmoid' },
      { kind: 'activation', fn: 'tanh' },
      { kind: 'activation', fn: 'softplus' },
      { kind: 'activation', fn: 'softmax' },
      { kind: 'activation', fn: 'linear' },
      { kind: 'activation', fn: 'relu' },
    ]);
    assert.deepEqual(parseLayers('maxpool:3:s2, avgpool:2 ,avgpool2d:3:s1,dropout:.25,dropout:0', image), [
      { kind: 'maxpool2d', size: 3, stride: 2 },
      { kind: 'avgpool2d', size: 2, stride: 2 },
      { kind: 'avgpool2d', size: 3, stride: 1 },
      { kind: 'dropout', rate: 0.25 },
      { kind: 'dropout', rate: 0 },
    ]);
  });

  test('batchnorm with its options, gap (no flatten after it), gelu', () => {
    assert.deepEqual(parseLayers('conv:8x3:same,batchnorm,gelu,bn:m0.01:eps0.001:noaffine,gap,batchnorm:m0.1,dense:10', [3, 8, 8]), [
      { kind: 'conv2d', filters: 8, kernel: [3, 3], stride: 1, padding: 'same' },
      { kind: 'batchnorm' },
      { kind: 'activation', fn: 'gelu' },
      { kind: 'batchnorm', momentum: 0.01, eps: 0.001, affine: false },
      { kind: 'global_avgpool' },
      { kind: 'batchnorm' },
      { kind: 'dense', units: 10 },
    ]);
    assert.equal(formatLayers([{ kind: 'batchnorm', momentum: 0.1, eps: 1e-5, affine: true }, { kind: 'global_avgpool' }]), 'batchnorm,gap');
    const text = 'conv:8x3:same,batchnorm:m0.01:eps0.001:noaffine,gelu,gap,dense:10:gelu';
    assert.equal(formatLayers(parseLayers(text, [1, 8, 8])), text);
  });

  test('residual blocks: their items in parentheses, round-trip, no nesting', () => {
    const text = 'conv:16x3:same,residual(conv:16x3:same:relu,conv:16x3:same,batchnorm),relu,residual(conv:32x3:same:s2:relu,conv:32x3:same),gap,dense:10';
    const layers = parseLayers(text, [1, 28, 28]);
    assert.deepEqual(layers[1], {
      kind: 'residual',
      layers: [
        { kind: 'conv2d', filters: 16, kernel: [3, 3], stride: 1, padding: 'same', activation: 'relu' },
        { kind: 'conv2d', filters: 16, kernel: [3, 3], stride: 1, padding: 'same' },
        { kind: 'batchnorm' },
      ],
    });
    assert.equal(layers.length, 6);
    assert.equal(formatLayers(layers), text);
    assert.deepEqual(parseLayers(formatLayers(layers), [1, 28, 28]), layers);
    assert.equal(formatLayer({ kind: 'residual', shortcut: 'auto', layers: [{ kind: 'dense', units: 4 }] }), 'residual(dense:4)');
    assert.deepEqual(parseLayers('res( dense:4:tanh , dense:4 ),dense:2', [4]), [
      { kind: 'residual', layers: [{ kind: 'dense', units: 4, activation: 'tanh' }, { kind: 'dense', units: 4 }] },
      { kind: 'dense', units: 2 },
    ]);
    const specOf = parseModelSpec({ input: [1, 28, 28], layers, loss: 'softmax_cross_entropy', optimizer: { kind: 'sgd', lr: 0.1 }, seed: 0 });
    assert.deepEqual(inferShapes(specOf)[3].outputShape, [32, 14, 14]);
    const errors: [string, string][] = [
      ['residual(dense:4,dense:0)', '--layers: item 1 "residual(dense:4,dense:0)": its item 2 "dense:0": units "0" is not a positive integer'],
      ['residual(residual(dense:4))', '--layers: item 1 "residual(residual(dense:4))": its item 1 "residual(dense:4)": a residual block cannot hold another residual block'],
      ['residual()', '--layers: item 1 "residual()": a residual block needs at least one layer, e.g. residual(conv:16x3:same)'],
      ['residual(dense:4', '--layers: a "(" is never closed'],
      ['dense:4),dense:2', '--layers: a ")" closes nothing'],
      ['dense(4)', '--layers: item 1 "dense(4)": parentheses belong to a residual block, e.g. residual(conv:16x3:same:relu,conv:16x3:same)'],
    ];
    for (const [input, message] of errors) {
      assert.throws(() => parseLayers(input, [4]), (error: Error) => error instanceof LayerSyntaxError && error.message === message, input);
    }
    try {
      parseLayers('dense:4,residual(dense:0)', [4]);
    } catch (error) {
      assert.equal((error as LayerSyntaxError).place?.kind, 'residual');
      assert.equal((error as LayerSyntaxError).place?.item, 1);
    }
  });

  test('errors name the item, its text and what is wrong', () => {
    const cases: [string, string][] = [
      ['dense:10,relu,conv:3x', '--layers: item 3 "conv:3x": "3x" is not FILTERSxK or FILTERSxKHxKW, e.g. 32x3 or 32x3x5'],
      ['dense', '--layers: item 1 "dense": needs the number of units, e.g. dense:128'],
      ['dense:0', '--layers: item 1 "dense:0": units "0" is not a positive integer'],
      ['dense:1.5', '--layers: item 1 "dense:1.5": units "1.5" is not a positive integer'],
      ['dense:10:relu:sigmoid', '--layers: item 1 "dense:10:relu:sigmoid": activation given twice'],
      ['dense:10:same', '--layers: item 1 "dense:10:same": unexpected "same" (expected an activation)'],
      ['conv', '--layers: item 1 "conv": needs filters and kernel, e.g. conv:32x3 or conv:32x3x5'],
      ['conv:0x3', '--layers: item 1 "conv:0x3": filters "0" is not a positive integer'],
      ['conv:8x3x3x3', '--layers: item 1 "conv:8x3x3x3": "8x3x3x3" is not FILTERSxK or FILTERSxKHxKW, e.g. 32x3 or 32x3x5'],
      ['conv:8x3:same:valid', '--layers: item 1 "conv:8x3:same:valid": padding given twice ("same" and "valid")'],
      ['conv:8x3:s2:s1', '--layers: item 1 "conv:8x3:s2:s1": stride given twice'],
      ['conv:8x3:s0', '--layers: item 1 "conv:8x3:s0": stride "0" is not a positive integer'],
      ['conv:8x3:bogus', '--layers: item 1 "conv:8x3:bogus": unexpected "bogus" (expected valid|same|full, a stride like s2, an activation)'],
      ['conv:8x3:relu:0.1', '--layers: item 1 "conv:8x3:relu:0.1": unexpected "0.1" (expected valid|same|full, a stride like s2, an activation)'],
      ['maxpool', '--layers: item 1 "maxpool": needs the window size, e.g. maxpool:2'],
      ['maxpool:2:relu', '--layers: item 1 "maxpool:2:relu": unexpected "relu" (expected a stride like s2)'],
      ['dropout', '--layers: item 1 "dropout": needs one rate in [0, 1), e.g. dropout:0.5'],
      ['dropout:1', '--layers: item 1 "dropout:1": rate 1 must be below 1'],
      ['dropout:-0.1', '--layers: item 1 "dropout:-0.1": rate "-0.1" is not a non-negative number'],
      ['leaky_relu:x', '--layers: item 1 "leaky_relu:x": unexpected "x"'],
      ['relu:0.1', '--layers: item 1 "relu:0.1": unexpected "0.1"'],
      ['flatten:2', '--layers: item 1 "flatten:2": takes no arguments'],
      ['dense:4,,dense:2', '--layers: item 2 "": empty layer'],
      ['conv:8x3,128', '--layers: item 2 "128": a bare number is a layer only when every item is a number (the course tool\'s form "30,60,10,1")'],
      ['gru:8', '--layers: item 1 "gru:8": unknown layer kind "gru"; known: dense, conv, maxpool, avgpool, flatten, dropout, batchnorm, gap, residual(...), linear, relu, leaky_relu, sigmoid, tanh, softplus, softmax, gelu'],
      ['batchnorm:m2', '--layers: item 1 "batchnorm:m2": momentum "2" must be in [0, 1]'],
      ['batchnorm:eps0', '--layers: item 1 "batchnorm:eps0": eps "0" must be above 0'],
      ['batchnorm:noaffine:noaffine', '--layers: item 1 "batchnorm:noaffine:noaffine": noaffine given twice'],
      ['batchnorm:relu', '--layers: item 1 "batchnorm:relu": unexpected "relu" (expected a momentum like m0.01, an eps like eps0.001, or noaffine)'],
      ['gap:2', '--layers: item 1 "gap:2": takes no arguments'],
      ['  ', '--layers: no layers given'],
    ];
    for (const [text, message] of cases) {
      assert.throws(() => parseLayers(text, image), (error: unknown) => {
        assert.ok(error instanceof LayerSyntaxError, text);
        assert.equal(error.message, message);
        return true;
      });
    }
    assert.throws(() => parseLayers('dense', [3], 'layers'), { message: 'layers: item 1 "dense": needs the number of units, e.g. dense:128' });
  });
});

describe('formatLayers', () => {
  test('canonical text round-trips exactly', () => {
    const texts = [
      'conv:8x3:relu,maxpool:2,flatten,dense:10',
      'conv:32x3x5:same:s2:leaky_relu:0.2,avgpool:3:s2,flatten,dense:64:leaky_relu,dropout:0.5,dense:10:softmax',
      'conv:4x2:full:tanh,maxpool:2:s1,flatten,dense:3:linear,leaky_relu:0.1,softplus',
    ];
    for (const text of texts) assert.equal(formatLayers(parseLayers(text, image)), text);
  });

  test('every preset round-trips layers -> text -> layers', () => {
    for (const preset of listPresets()) {
      const text = formatLayers(preset.spec.layers);
      assert.deepEqual(parseLayers(text, preset.spec.input), preset.spec.layers, preset.name);
    }
    assert.equal(
      formatLayers(listPresets().find((p) => p.name === 'seed000')!.spec.layers),
      'conv:4x2:same:relu,conv:4x2:same:relu,maxpool:4,flatten,dense:128:relu,dense:10',
    );
  });

  test('defaults are left out; explicit non-defaults kept', () => {
    assert.equal(formatLayer({ kind: 'conv2d', filters: 2, kernel: [3, 3] }), 'conv:2x3');
    assert.equal(formatLayer({ kind: 'conv2d', filters: 2, kernel: [3, 1], stride: 1, padding: 'valid' }), 'conv:2x3x1');
    assert.equal(formatLayer({ kind: 'maxpool2d', size: 2 }), 'maxpool:2');
    assert.equal(formatLayer({ kind: 'maxpool2d', size: 2, stride: 2 }), 'maxpool:2');
    assert.equal(formatLayer({ kind: 'activation', fn: 'leaky_relu', alpha: 0.3 }), 'leaky_relu:0.3');
    assert.equal(formatLayer({ kind: 'dropout', rate: 1e-7 }), 'dropout:1e-7');
    assert.deepEqual(parseLayers('dropout:1e-7', [3]), [{ kind: 'dropout', rate: 1e-7 }]);
  });
});

describe('the C course tool form', () => {
  test('integers only: input width then sigmoid layer widths', () => {
    assert.ok(isCourseLayers('30,60,10,1'));
    assert.ok(isCourseLayers(' 30 , 60 '));
    assert.ok(!isCourseLayers('30'));
    assert.ok(!isCourseLayers('dense:30,10'));
    assert.deepEqual(parseCourseLayers('30,60,10,1'), {
      inputWidth: 30,
      layers: [
        { kind: 'dense', units: 60, activation: 'sigmoid' },
        { kind: 'dense', units: 10, activation: 'sigmoid' },
        { kind: 'dense', units: 1, activation: 'sigmoid' },
      ],
      loss: 'mse',
    });
  });

  test('the input width must match the data', () => {
    assert.equal(parseCourseLayers('30,60,10,1', 30).inputWidth, 30);
    assert.throws(() => parseCourseLayers('30,60,10,1', 31), {
      name: 'LayerSyntaxError',
      message: '--layers: the first number 30 is the input width, but the data has 31 features',
    });
    assert.throws(() => parseCourseLayers('30'), { message: '--layers: "30" needs an input width and at least one layer width, e.g. 30,60,10,1' });
    assert.throws(() => parseCourseLayers('30,0,1'), { message: '--layers: item 2 "0": not a positive integer (the course tool\'s form is widths only)' });
  });

  test('parseLayers accepts the form and checks the width against the input shape', () => {
    assert.deepEqual(parseLayers('784,128,10', image), [
      { kind: 'flatten' },
      { kind: 'dense', units: 128, activation: 'sigmoid' },
      { kind: 'dense', units: 10, activation: 'sigmoid' },
    ]);
    assert.deepEqual(parseLayers('4,3', [4]), [{ kind: 'dense', units: 3, activation: 'sigmoid' }]);
    assert.throws(() => parseLayers('30,60,10,1', [4]), { message: '--layers: the first number 30 is the input width, but the data has 4 features' });
  });
});
