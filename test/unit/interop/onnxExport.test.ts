// ONNX export: every layer kind, activation, padding, pool, loss head and preprocessing, run in
// onnxruntime-node on the same raw inputs as our evaluation (services.evaluation.predictRows, CPU):
// the probabilities must agree within 1e-5. Also the graph's schema fields and metadata.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { onnx } from 'onnx-proto';
import * as ort from 'onnxruntime-node';
import type { Preprocessing } from '../../../app/core/data/preprocess';
import { convPadding, onnxInputName, onnxIrVersion, onnxOpsetVersion, onnxOutputName, onnxRegressionOutputName } from '../../../app/core/interop/onnxExport';
import { classCount, parameterCount } from '../../../app/core/model/shapes';
import type { LayerSpec, LossName, ModelSpec } from '../../../app/core/model/spec';
import { mulberry32 } from '../../../app/core/data/split';
import * as engine from '../../../app/engine';
import { services, type TrainedModel } from '../../../app/services';

const tolerance = 1e-5;
const rows = 16;
const results: { name: string; maxDiff: number }[] = [];

function spec(input: ModelSpec['input'], layers: LayerSpec[], loss: LossName = 'softmax_cross_entropy'): ModelSpec {
  return { input, layers, loss, optimizer: { kind: 'sgd', lr: 0.1 }, seed: 7 };
}

/**
 * The engine's seeded initial weights, with biases made non-zero so that they are tested too, and batchnorm's
 * gamma, beta and running statistics away from 1, 0, 0 and 1 (as after training).
 */
function model(modelSpec: ModelSpec, preprocessing: Preprocessing = { kind: 'none' }): TrainedModel {
  const parameters = engine.initialParameters(modelSpec);
  const next = mulberry32(11);
  for (const tensor of engine.parameterTable(modelSpec)) {
    const draw = tensor.name.endsWith('.gamma') ? () => 1 + (next() - 0.5) * 0.6
      : tensor.name.endsWith('.running_var') ? () => 0.5 + next()
      : /\.(bias|beta|running_mean)$/.test(tensor.name) ? () => next() - 0.5
      : undefined;
    if (draw) for (let i = 0; i < tensor.size; i++) parameters[tensor.offset + i] = draw();
  }
  const classes = classCount(modelSpec);
  return {
    spec: modelSpec,
    parameters,
    labels: Array.from({ length: classes }, (_, i) => `class ${i}`),
    featureNames: modelSpec.input.length === 1 ? Array.from({ length: modelSpec.input[0] }, (_, i) => `f${i}`) : [],
    inputShape: [...modelSpec.input],
    preprocessing,
  };
}

/** Raw inputs: pixels 0-255 for image models with a pixel scale, otherwise values around `center`. */
function rawInputs(width: number, pixels: boolean, center = 0, spread = 2, seed = 5): Float32Array {
  const next = mulberry32(seed);
  return Float32Array.from({ length: rows * width }, () => (pixels ? Math.round(next() * 255) : center + spread * (next() - 0.5) * 2));
}

async function compare(name: string, trained: TrainedModel, inputs: Float32Array): Promise<number> {
  const bytes = services.models.exportOnnx(trained);
  const session = await ort.InferenceSession.create(bytes);
  const feeds = { [onnxInputName]: new ort.Tensor('float32', inputs, [rows, ...rawShape(trained)]) };
  const output = (await session.run(feeds))[onnxOutputName];
  await session.release();
  const ours = await services.evaluation.predictRows(trained, inputs, { device: 'cpu' });
  const classes = trained.labels.length;
  assert.deepEqual(output.dims, [rows, classes], `${name}: output shape`);
  const theirs = output.data as Float32Array;
  assert.equal(theirs.length, ours.probabilities.length);
  let maxDiff = 0;
  for (let i = 0; i < theirs.length; i++) {
    assert.ok(Number.isFinite(theirs[i]), `${name}: onnxruntime gave ${theirs[i]} at ${i}`);
    maxDiff = Math.max(maxDiff, Math.abs(theirs[i] - ours.probabilities[i]));
  }
  // probabilities that are all alike would hide a wrong graph: the rows must differ
  const spreadOfFirstClass = Math.max(...Array.from({ length: rows }, (_, r) => ours.probabilities[r * classes])) -
    Math.min(...Array.from({ length: rows }, (_, r) => ours.probabilities[r * classes]));
  assert.ok(spreadOfFirstClass > 1e-4, `${name}: the test inputs give (nearly) the same output for every row`);
  results.push({ name, maxDiff });
  assert.ok(maxDiff <= tolerance, `${name}: max |onnxruntime - engine| = ${maxDiff} > ${tolerance}`);
  return maxDiff;
}

/** The input a file holds: the model's, less the indicator features its imputation appends. */
function rawShape(trained: TrainedModel): number[] {
  const imputation = trained.preprocessing.imputation;
  return imputation ? [imputation.fill.length] : [...trained.spec.input];
}

/** Every `every`-th value becomes NaN (a missing cell), starting at `offset`. */
function withMissing(values: Float32Array, every: number, offset = 1): Float32Array {
  const copy = new Float32Array(values);
  for (let i = offset; i < copy.length; i += every) copy[i] = Number.NaN;
  return copy;
}

/** A regression model's `values` output against predictRows' values (the targets' units). */
async function compareValues(name: string, trained: TrainedModel, inputs: Float32Array): Promise<number> {
  const session = await ort.InferenceSession.create(services.models.exportOnnx(trained));
  const output = (await session.run({ [onnxInputName]: new ort.Tensor('float32', inputs, [rows, ...rawShape(trained)]) }))[onnxRegressionOutputName];
  await session.release();
  const ours = await services.evaluation.predictRows(trained, inputs, { device: 'cpu' });
  const targets = trained.preprocessing.target!.names.length;
  assert.deepEqual(output.dims, [rows, targets], `${name}: output shape`);
  const theirs = output.data as Float32Array;
  let maxRelative = 0;
  for (let i = 0; i < theirs.length; i++) {
    assert.ok(Number.isFinite(theirs[i]), `${name}: onnxruntime gave ${theirs[i]} at ${i}`);
    maxRelative = Math.max(maxRelative, Math.abs(theirs[i] - ours.values![i]) / Math.max(1, Math.abs(ours.values![i])));
  }
  results.push({ name, maxDiff: maxRelative });
  assert.ok(maxRelative <= tolerance, `${name}: max relative |onnxruntime - engine| = ${maxRelative} > ${tolerance}`);
  return maxRelative;
}

after(() => {
  // The per-model figures for the record (docs and reports quote them).
  process.stdout.write(`ONNX vs engine, max |difference| of the probabilities:\n${results.map((r) => `  ${r.name}: ${r.maxDiff.toExponential(2)}`).join('\n')}\n`);
});

describe('ONNX export matches the engine in onnxruntime', () => {
  const activations = ['linear', 'relu', 'leaky_relu', 'sigmoid', 'tanh', 'softplus', 'softmax', 'gelu'] as const;
  for (const activation of activations) {
    test(`MLP with ${activation}`, async () => {
      const hidden: LayerSpec = activation === 'leaky_relu'
        ? { kind: 'dense', units: 12, activation, alpha: 0.2 }
        : { kind: 'dense', units: 12, activation };
      const trained = model(spec([6], [hidden, { kind: 'dense', units: 4 }]));
      await compare(`mlp ${activation}`, trained, rawInputs(6, false));
    });
  }

  test('activation layers (leaky ReLU default alpha, softplus, tanh) and dropout', async () => {
    const trained = model(spec([5], [
      { kind: 'dense', units: 10 },
      { kind: 'activation', fn: 'leaky_relu' },
      { kind: 'dropout', rate: 0.5 },
      { kind: 'dense', units: 8, activation: 'softplus' },
      { kind: 'activation', fn: 'tanh' },
      { kind: 'dense', units: 3 },
      { kind: 'activation', fn: 'softmax' },
    ]));
    await compare('activation layers + dropout + trailing softmax (folded)', trained, rawInputs(5, false));
  });

  test('batchnorm over channels and over features (running statistics), global average pool, gelu', async () => {
    const trained = model(spec([3, 8, 7], [
      { kind: 'conv2d', filters: 4, kernel: [3, 3], padding: 'same' },
      { kind: 'batchnorm' },
      { kind: 'activation', fn: 'gelu' },
      { kind: 'conv2d', filters: 5, kernel: [3, 3], stride: 2, padding: 'same', activation: 'gelu' },
      { kind: 'batchnorm', affine: false, eps: 0.01 },
      { kind: 'global_avgpool' },
      { kind: 'batchnorm', momentum: 0.01 },
      { kind: 'dense', units: 3 },
    ]));
    await compare('conv, batchnorm, gelu, batchnorm not affine, gap, batchnorm flat', trained, rawInputs(3 * 8 * 7, false, 0.5, 1));
  });

  test('residual blocks: identity and 1x1 projection shortcuts (Add, Conv), batchnorm inside, a flat block', async () => {
    const trained = model(spec([3, 9, 8], [
      { kind: 'conv2d', filters: 4, kernel: [3, 3], padding: 'same', activation: 'relu' },
      { kind: 'residual', layers: [
        { kind: 'conv2d', filters: 4, kernel: [3, 3], padding: 'same' }, { kind: 'batchnorm' }, { kind: 'activation', fn: 'relu' },
      ] },
      { kind: 'residual', layers: [
        { kind: 'conv2d', filters: 6, kernel: [3, 3], stride: 2, padding: 'same', activation: 'relu' },
        { kind: 'conv2d', filters: 6, kernel: [3, 3], padding: 'same' }, { kind: 'batchnorm', eps: 0.001 },
      ] },
      { kind: 'activation', fn: 'relu' },
      { kind: 'global_avgpool' },
      { kind: 'residual', layers: [{ kind: 'dense', units: 6, activation: 'tanh' }, { kind: 'dense', units: 6 }] },
      { kind: 'dense', units: 3 },
    ]));
    await compare('conv, identity block, stride-2 projection block, gap, flat block', trained, rawInputs(3 * 9 * 8, false, 0.5, 1));
    const graph = onnx.ModelProto.decode(services.models.exportOnnx(trained)).graph as onnx.GraphProto;
    const adds = graph.node.filter((n) => n.opType === 'Add' && (n.name ?? '').startsWith('residual'));
    assert.equal(adds.length, 3);
    const projection = graph.node.find((n) => n.name === 'residual_2_shortcut') as onnx.NodeProto;
    assert.deepEqual(projection.input.slice(1), ['layers.2.shortcut.weight', 'layers.2.shortcut.bias']);
    assert.deepEqual(projection.attribute.find((a) => a.name === 'strides')?.ints?.map(Number), [2, 2]);
  });

  test('a dense head with a softmax activation (folded into the loss, not applied twice)', async () => {
    const trained = model(spec([4], [{ kind: 'dense', units: 6, activation: 'relu' }, { kind: 'dense', units: 3, activation: 'softmax' }]));
    await compare('dense softmax head', trained, rawInputs(4, false));
  });

  test('CNN with same, valid and full padding, stride 2, an even kernel with same padding, max and avg pool', async () => {
    const trained = model(spec([2, 9, 8], [
      { kind: 'conv2d', filters: 4, kernel: [3, 3], padding: 'same', activation: 'relu' },
      { kind: 'conv2d', filters: 3, kernel: [2, 2], padding: 'same', stride: 1, activation: 'tanh' },
      { kind: 'conv2d', filters: 3, kernel: [4, 2], padding: 'same', stride: 2 },
      { kind: 'maxpool2d', size: 2, stride: 1 },
      { kind: 'conv2d', filters: 4, kernel: [2, 3], padding: 'full', activation: 'leaky_relu', alpha: 0.1 },
      { kind: 'avgpool2d', size: 2 },
      { kind: 'conv2d', filters: 5, kernel: [2, 2], padding: 'valid', stride: 2, activation: 'sigmoid' },
      { kind: 'flatten' },
      { kind: 'dropout', rate: 0.25 },
      { kind: 'dense', units: 10, activation: 'softplus' },
      { kind: 'dense', units: 4 },
    ]));
    await compare('cnn same/valid/full, stride 2, even kernels, pools', trained, rawInputs(2 * 9 * 8, false, 0.5, 1));
  });

  test('strided same padding with an odd remainder, overlapping pools of size 3 stride 2', async () => {
    const trained = model(spec([1, 11, 10], [
      { kind: 'conv2d', filters: 3, kernel: [4, 4], padding: 'same', stride: 3, activation: 'relu' },
      { kind: 'conv2d', filters: 3, kernel: [3, 3], padding: 'full', stride: 2 },
      { kind: 'maxpool2d', size: 3, stride: 2 },
      { kind: 'flatten' },
      { kind: 'dense', units: 3 },
    ]));
    await compare('cnn strided same 4x4 s3, full s2, maxpool 3 s2', trained, rawInputs(110, false, 0.5, 1));
  });

  test('binary cross-entropy with one output and with several (sigmoid heads)', async () => {
    await compare('bce 1 output', model(spec([3], [{ kind: 'dense', units: 5, activation: 'tanh' }, { kind: 'dense', units: 1, activation: 'sigmoid' }], 'binary_cross_entropy')), rawInputs(3, false));
    await compare('bce 3 outputs', model(spec([3], [{ kind: 'dense', units: 5, activation: 'relu' }, { kind: 'dense', units: 3 }], 'binary_cross_entropy')), rawInputs(3, false));
  });

  test('mse and mae heads (raw outputs; one output gives [1 - q, q])', async () => {
    await compare('mse 3 outputs', model(spec([4], [{ kind: 'dense', units: 6, activation: 'sigmoid' }, { kind: 'dense', units: 3, activation: 'sigmoid' }], 'mse')), rawInputs(4, false));
    await compare('mae 1 output', model(spec([4], [{ kind: 'dense', units: 6, activation: 'relu' }, { kind: 'dense', units: 1, activation: 'sigmoid' }], 'mae')), rawInputs(4, false));
  });

  test('a regression head: outputs turned back into the targets\' units, two targets, z-scored inputs', async () => {
    const regression: ModelSpec = { ...spec([4], [{ kind: 'dense', units: 6, activation: 'tanh' }, { kind: 'dense', units: 2 }], 'mse'), task: 'regression' };
    const preprocessing: Preprocessing = {
      kind: 'zscore', featureCount: 4, mean: [10, -3, 0.5, 100], std: [2, 0.5, 1, 25],
      target: { names: ['price', 'rent'], mean: [250_000, 1200], std: [80_000, 300] },
    };
    const trained = { ...model(regression, preprocessing), labels: [] };
    await compareValues('regression 2 targets', trained, rawInputs(4, false, 20, 40));
  });

  test('imputation: missing cells (NaN) filled and indicator features appended before the z-score', async () => {
    const preprocessing: Preprocessing = {
      kind: 'zscore', featureCount: 6, mean: [10, -3, 0.5, 100, 0.1, 0.2], std: [2, 0.5, 1, 25, 0.3, 0.4],
      imputation: { fill: [9, -2, 0.25, 80], strategies: ['mean', 'median', 'most_frequent', 'constant'], indicators: [1, 3] },
    };
    const trained = model(spec([6], [{ kind: 'dense', units: 8, activation: 'relu' }, { kind: 'dense', units: 3 }]), preprocessing);
    const inputs = withMissing(rawInputs(4, false, 20, 40), 5);
    assert.ok(inputs.some(Number.isNaN));
    await compare('imputation with indicators', trained, inputs);
  });

  test('iterative imputation: the missing cells of each feature estimated from the others, step by step', async () => {
    const preprocessing: Preprocessing = {
      kind: 'zscore', featureCount: 4, mean: [10, -3, 0.5, 100], std: [2, 0.5, 1, 25],
      imputation: {
        fill: [9, -2, 0.25, 80], strategies: ['iterative', 'iterative', 'median', 'iterative'], indicators: [],
        iterative: [
          { feature: 0, weights: [0, 0.5, -1.25, 0.01], bias: 3 },
          { feature: 3, weights: [2, 0, 0.75, 0], bias: -1 },
          { feature: 0, weights: [0, 0.25, 0.5, 0.02], bias: 1.5 },
          { feature: 1, weights: [-0.1, 0, 0, 0.03], bias: 0.5 },
        ],
      },
    };
    const trained = model(spec([4], [{ kind: 'dense', units: 8, activation: 'relu' }, { kind: 'dense', units: 3 }]), preprocessing);
    await compare('iterative imputation', trained, withMissing(rawInputs(4, false, 20, 40), 3));
  });

  test('z-score preprocessing per feature', async () => {
    const preprocessing: Preprocessing = { kind: 'zscore', featureCount: 4, mean: [10, -3, 0.5, 100], std: [2, 0.5, 1, 25] };
    const trained = model(spec([4], [{ kind: 'dense', units: 8, activation: 'relu' }, { kind: 'dense', units: 3 }]), preprocessing);
    await compare('zscore per feature', trained, rawInputs(4, false, 20, 40));
  });

  test('min-max preprocessing per feature', async () => {
    const preprocessing: Preprocessing = { kind: 'minmax', featureCount: 3, min: [0, -10, 5], max: [1, 10, 50] };
    const trained = model(spec([3], [{ kind: 'dense', units: 8, activation: 'tanh' }, { kind: 'dense', units: 2 }]), preprocessing);
    await compare('minmax per feature', trained, rawInputs(3, false, 10, 30));
  });

  test('an image model with pixel scale (raw 0-255 pixels in)', async () => {
    const preprocessing: Preprocessing = { kind: 'none', featureCount: 64, imageShape: [1, 8, 8], pixelScale: 255 };
    const trained = model(spec([1, 8, 8], [
      { kind: 'conv2d', filters: 4, kernel: [3, 3], padding: 'same', activation: 'relu' },
      { kind: 'maxpool2d', size: 2 },
      { kind: 'flatten' },
      { kind: 'dense', units: 5 },
    ]), preprocessing);
    await compare('image, pixel scale 255', trained, rawInputs(64, true));
  });

  test('an image model with pixel scale and a global z-score', async () => {
    const preprocessing: Preprocessing = { kind: 'zscore', featureCount: 64, imageShape: [1, 8, 8], pixelScale: 255, mean: [0.13], std: [0.31] };
    const trained = model(spec([1, 8, 8], [
      { kind: 'conv2d', filters: 3, kernel: [3, 3], activation: 'relu' },
      { kind: 'avgpool2d', size: 2 },
      { kind: 'flatten' },
      { kind: 'dense', units: 4 },
    ]), preprocessing);
    await compare('image, pixel scale + global zscore', trained, rawInputs(64, true));
  });

  test('a model trained for a few steps on random data through the services', async () => {
    const next = mulberry32(3);
    const count = 60;
    const features = Float32Array.from({ length: count * 5 }, () => 10 * next());
    const labels = Int32Array.from({ length: count }, (_, i) => i % 3);
    const modelSpec = spec([5], [{ kind: 'dense', units: 16, activation: 'relu' }, { kind: 'dropout', rate: 0.2 }, { kind: 'dense', units: 3 }]);
    const preprocessing: Preprocessing = { kind: 'zscore', featureCount: 5, mean: [5, 5, 5, 5, 5], std: [2.9, 2.8, 2.9, 3, 2.9] };
    const normalized = Float32Array.from(features, (value, i) => (value - 5) / preprocessing.std![i % 5]);
    const run = engine.train(modelSpec, { features: normalized, labels }, null, { epochs: 3, batchSize: 16, device: 'cpu', seed: 1 });
    const result = await run.promise;
    assert.equal(result.status, 'completed');
    const trained = { ...model(modelSpec, preprocessing), parameters: result.parameters };
    await compare('trained 3 epochs, zscore', trained, rawInputs(5, false, 5, 5));
  });
});

describe('the ONNX file', () => {
  const trained = model(spec([1, 6, 6], [
    { kind: 'conv2d', filters: 2, kernel: [3, 3], padding: 'same', activation: 'relu' },
    { kind: 'flatten' },
    { kind: 'dense', units: 3 },
  ]), { kind: 'zscore', featureCount: 36, imageShape: [1, 6, 6], pixelScale: 255, mean: [0.2], std: [0.3] });
  const decoded = onnx.ModelProto.decode(services.models.exportOnnx(trained));
  const graph = decoded.graph as onnx.GraphProto;

  test('opset 13 of the default domain, IR version 7, producer NN Studio', () => {
    assert.equal(Number(decoded.irVersion), onnxIrVersion);
    assert.equal(onnxOpsetVersion, 13);
    assert.deepEqual(decoded.opsetImport.map((opset) => [opset.domain, Number(opset.version)]), [['', 13]]);
    assert.equal(decoded.producerName, 'NN Studio');
  });

  test('weights are initializers named as in the safetensors file, holding the same floats', () => {
    const names = graph.initializer.map((tensor) => tensor.name);
    for (const name of ['layers.0.weight', 'layers.0.bias', 'layers.2.weight', 'layers.2.bias']) assert.ok(names.includes(name), name);
    const weight = graph.initializer.find((tensor) => tensor.name === 'layers.0.weight') as onnx.TensorProto;
    assert.deepEqual(weight.dims.map(Number), [2, 1, 3, 3]);
    const raw = weight.rawData;
    const floats = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
    assert.deepEqual(Array.from(floats), Array.from(trained.parameters.subarray(0, 18)));
    const total = graph.initializer.filter((tensor) => tensor.name!.startsWith('layers.')).reduce((sum, tensor) => sum + (tensor as onnx.TensorProto).dims.reduce((a, b) => a * Number(b), 1), 0);
    assert.equal(total, parameterCount(trained.spec));
  });

  test('the preprocessing is the first nodes, and the metadata names classes, features and preprocessing', () => {
    const ops = graph.node.map((node) => node.opType);
    assert.deepEqual(ops.slice(0, 3), ['Div', 'Sub', 'Div']);
    assert.deepEqual(ops.slice(3), ['Conv', 'Relu', 'Flatten', 'Gemm', 'Softmax']);
    const metadata = Object.fromEntries(decoded.metadataProps.map((entry) => [entry.key, entry.value]));
    assert.deepEqual(JSON.parse(metadata.class_labels), ['class 0', 'class 1', 'class 2']);
    assert.equal(metadata.producer, 'NN Studio');
    assert.match(metadata.preprocessing, /divide by 255, then z-score/);
    assert.deepEqual(JSON.parse(metadata['nnstudio.preprocessing']).mean, [0.2]);
    assert.match(metadata.output, /softmax/);
    const input = graph.input[0] as onnx.ValueInfoProto;
    assert.equal(input.name, onnxInputName);
    assert.deepEqual((input.type as onnx.TypeProto).tensorType!.shape!.dim!.map((dim) => dim.dimParam || Number(dim.dimValue)), ['N', 1, 6, 6]);
    assert.equal(graph.output[0].name, onnxOutputName);
  });

  test('batchnorm exports its running statistics under the model file\'s names; gap and gelu their nodes', () => {
    const bn = model(spec([2, 4, 4], [
      { kind: 'conv2d', filters: 3, kernel: [3, 3], padding: 'same' },
      { kind: 'batchnorm', eps: 0.001 },
      { kind: 'activation', fn: 'gelu' },
      { kind: 'global_avgpool' },
      { kind: 'dense', units: 2 },
    ]));
    const bnGraph = onnx.ModelProto.decode(services.models.exportOnnx(bn)).graph as onnx.GraphProto;
    const names = bnGraph.initializer.map((tensor) => tensor.name);
    for (const name of ['layers.1.gamma', 'layers.1.beta', 'layers.1.running_mean', 'layers.1.running_var']) assert.ok(names.includes(name), name);
    const node = bnGraph.node.find((n) => n.opType === 'BatchNormalization') as onnx.NodeProto;
    assert.deepEqual(node.input.slice(1), ['layers.1.gamma', 'layers.1.beta', 'layers.1.running_mean', 'layers.1.running_var']);
    assert.ok(Math.abs((node.attribute.find((a) => a.name === 'epsilon')!.f ?? 0) - 0.001) < 1e-9);
    const ops = bnGraph.node.map((n) => n.opType);
    assert.deepEqual(ops, ['Conv', 'BatchNormalization', 'Div', 'Erf', 'Add', 'Mul', 'Mul', 'GlobalAveragePool', 'Flatten', 'Gemm', 'Softmax']);
  });

  test('TensorFlow-style same padding puts the odd pixel at the bottom / right', () => {
    assert.deepEqual(convPadding(8, 2, 1, 'same'), [0, 1]);
    assert.deepEqual(convPadding(8, 4, 1, 'same'), [1, 2]);
    assert.deepEqual(convPadding(9, 3, 2, 'same'), [1, 1]);
    assert.deepEqual(convPadding(10, 3, 2, 'same'), [0, 1]);
    assert.deepEqual(convPadding(7, 3, 2, 'full'), [2, 2]);
    assert.deepEqual(convPadding(7, 3, 2, 'valid'), [0, 0]);
  });
});
