import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { parseModelSpec } from '../../../app/core/model/spec';
import type { ModelSpec } from '../../../app/core/model/spec';
import { parameterCount, parameterTable } from '../../../app/core/model/shapes';
import {
  ModelFileError,
  decodeModel,
  encodeModel,
  loadModel,
  maxHeaderBytes,
  saveModel,
} from '../../../app/core/model/modelFile';
import type { Model } from '../../../app/core/model/modelFile';
import { getPreset } from '../../../app/core/model/presets';

// ---- fixtures ----

// conv 2x2x8 same on 1x4x4 -> 8x4x4, maxpool 2 -> 8x2x2, flatten 32, dense 3:
// layers.0.weight [8,1,2,2] (32 floats), layers.0.bias [8], layers.3.weight [3,32] (96), layers.3.bias [3]: 139 floats
const smallSpec: ModelSpec = parseModelSpec({
  input: [1, 4, 4],
  layers: [
    { kind: 'conv2d', filters: 8, kernel: [2, 2], stride: 1, padding: 'same', activation: 'relu' },
    { kind: 'maxpool2d', size: 2, stride: 2 },
    { kind: 'flatten' },
    { kind: 'dense', units: 3 },
  ],
  loss: 'softmax_cross_entropy',
  optimizer: { kind: 'adam', lr: 0.001, beta1: 0.9, beta2: 0.999, eps: 1e-7 },
  seed: 42,
});

function parameters(count: number, seed = 1): Float32Array {
  const values = new Float32Array(count);
  let state = seed;
  for (let i = 0; i < count; i++) {
    state = (state * 1103515245 + 12345) >>> 0;
    values[i] = (state / 2 ** 32 - 0.5) * 2;
  }
  // values whose bits must survive exactly
  const special = [-0, 1e-45, -1.1754942e-38, 3.4028234663852886e38, -3.4028234663852886e38, 1 / 3];
  special.forEach((value, i) => {
    if (i * 7 < count) values[i * 7] = value;
  });
  return values;
}

function smallModel(): Model {
  return {
    spec: smallSpec,
    parameters: parameters(139),
    labels: ['circle', 'square', 'triangle — Δ'],
    featureNames: Array.from({ length: 16 }, (_, i) => `px${i}`),
    inputShape: [1, 4, 4],
    preprocessing: { kind: 'zscore', mean: [0.5], std: [0.25], imageShape: [1, 4, 4] },
    training: {
      options: { epochs: 2, batchSize: 32, shuffle: true },
      history: [
        { epoch: 1, trainLoss: 0.9, trainAccuracy: 0.6, validationLoss: 1.0, validationAccuracy: 0.55, seconds: 0.25 },
        { epoch: 2, trainLoss: null, trainAccuracy: null, seconds: 0.5 },
      ],
      device: 'cpu (2 threads)',
      seconds: 0.75,
    },
    metrics: { test: { accuracy: 0.5 }, loss: 1.25 },
  };
}

function bits(values: Float32Array): number[] {
  return Array.from(new Uint32Array(values.buffer, values.byteOffset, values.length));
}

interface Parts {
  header: Record<string, any>;
  data: Buffer;
}

function split(file: Buffer): Parts {
  const length = Number(file.readBigUInt64LE(0));
  return { header: JSON.parse(file.subarray(8, 8 + length).toString('utf8')), data: file.subarray(8 + length) };
}

// Reassembles a file from a (modified) header and data section, with the header padded as the encoder does.
function join(header: unknown, data: Buffer): Buffer {
  let text = JSON.stringify(header);
  while ((Buffer.byteLength(text) + 8) % 8 !== 0) text += ' ';
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(Buffer.byteLength(text)));
  return Buffer.concat([length, Buffer.from(text, 'utf8'), data]);
}

function withHeader(edit: (header: Record<string, any>) => void): Buffer {
  const { header, data } = split(encodeModel(smallModel()));
  edit(header);
  return join(header, data);
}

function withMetadata(edit: (metadata: Record<string, any>) => void): Buffer {
  return withHeader((header) => {
    const metadata = JSON.parse(header.__metadata__.nnstudio);
    edit(metadata);
    header.__metadata__.nnstudio = JSON.stringify(metadata);
  });
}

function expectProblem(bytes: Uint8Array, message: string | RegExp, options = {}): void {
  assert.throws(
    () => decodeModel(bytes, 'm.safetensors', options),
    (error: unknown) => {
      assert.ok(error instanceof ModelFileError, `a ModelFileError, got ${error}`);
      assert.equal(error.file, 'm.safetensors');
      if (typeof message === 'string') assert.equal(error.message, `m.safetensors: ${message}`);
      else assert.match(error.message, message);
      assert.ok(error.message.startsWith('m.safetensors: '));
      return true;
    },
  );
}

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-modelfile-'));
after(() => {
  fs.chmodSync(tmpRoot, 0o755);
  fs.rmSync(tmpRoot, { recursive: true, force: true });
});
let folderCount = 0;
function freshFolder(): string {
  const folder = path.join(tmpRoot, `case${++folderCount}`);
  fs.mkdirSync(folder);
  return folder;
}

// ---- round trip ----

describe('encode and decode', () => {
  test('round trip keeps every parameter bit and all metadata', () => {
    const model = smallModel();
    const decoded = decodeModel(encodeModel(model), 'm.safetensors');
    assert.deepEqual(bits(decoded.parameters), bits(model.parameters));
    assert.ok(Object.is(decoded.parameters[0], -0));
    assert.deepEqual(decoded.spec, model.spec);
    assert.deepEqual(decoded.labels, model.labels);
    assert.deepEqual(decoded.featureNames, model.featureNames);
    assert.deepEqual(decoded.inputShape, model.inputShape);
    assert.deepEqual(decoded.preprocessing, model.preprocessing);
    assert.deepEqual(decoded.training, model.training);
    assert.deepEqual(decoded.metrics, model.metrics);
  });

  test('batchnorm: gamma, beta, running_mean and running_var are tensors of the file, and load back bit for bit', () => {
    const spec = parseModelSpec({
      input: [2, 4, 4],
      layers: [
        { kind: 'conv2d', filters: 3, kernel: [3, 3], padding: 'same' },
        { kind: 'batchnorm', momentum: 0.01 },
        { kind: 'activation', fn: 'gelu' },
        { kind: 'global_avgpool' },
        { kind: 'batchnorm', affine: false },
        { kind: 'dense', units: 2 },
      ],
      loss: 'softmax_cross_entropy',
      optimizer: { kind: 'sgd', lr: 0.1 },
      seed: 1,
    });
    const count = parameterCount(spec);
    assert.equal(count, 3 * 2 * 9 + 3 + 4 * 3 + 2 * 3 + 2 * 3 + 2);
    const model: Model = { ...smallModel(), spec, parameters: parameters(count, 5), featureNames: [], inputShape: [2, 4, 4], labels: ['a', 'b'] };
    const bytes = encodeModel(model);
    const header = JSON.parse(bytes.subarray(8, 8 + Number(bytes.readBigUInt64LE(0))).toString('utf8')) as Record<string, { shape: number[]; data_offsets: number[] }>;
    const names = Object.keys(header).filter((name) => name !== '__metadata__');
    assert.deepEqual(names, [
      'layers.0.weight', 'layers.0.bias', 'layers.1.gamma', 'layers.1.beta', 'layers.1.running_mean', 'layers.1.running_var',
      'layers.4.running_mean', 'layers.4.running_var', 'layers.5.weight', 'layers.5.bias',
    ]);
    assert.deepEqual(header['layers.1.running_var'].shape, [3]);
    assert.deepEqual(header['layers.1.running_var'].data_offsets, [(57 + 9) * 4, (57 + 12) * 4]);
    const decoded = decodeModel(bytes, 'bn.safetensors');
    assert.deepEqual(bits(decoded.parameters), bits(model.parameters));
    assert.deepEqual(decoded.spec, spec);
    assert.deepEqual(parameterTable(spec).map((tensor) => tensor.name), names);
  });

  test('residual blocks: their layers\' tensors and the projection\'s are tensors of the file, and load back bit for bit', () => {
    const spec = parseModelSpec({
      input: [2, 4, 4],
      layers: [
        { kind: 'residual', layers: [{ kind: 'conv2d', filters: 3, kernel: [3, 3], stride: 2, padding: 'same', activation: 'relu' }, { kind: 'batchnorm' }] },
        { kind: 'residual', layers: [{ kind: 'conv2d', filters: 3, kernel: [3, 3], padding: 'same' }] },
        { kind: 'global_avgpool' },
        { kind: 'dense', units: 2 },
      ],
      loss: 'softmax_cross_entropy',
      optimizer: { kind: 'sgd', lr: 0.1 },
      seed: 1,
    });
    const count = parameterCount(spec);
    assert.equal(count, (3 * 2 * 9 + 3) + 4 * 3 + (3 * 2 + 3) + (3 * 3 * 9 + 3) + (2 * 3 + 2));
    const model: Model = { ...smallModel(), spec, parameters: parameters(count, 6), featureNames: [], inputShape: [2, 4, 4], labels: ['a', 'b'] };
    const bytes = encodeModel(model);
    const header = JSON.parse(bytes.subarray(8, 8 + Number(bytes.readBigUInt64LE(0))).toString('utf8')) as Record<string, { shape: number[]; data_offsets: number[] }>;
    const names = Object.keys(header).filter((name) => name !== '__metadata__');
    assert.deepEqual(names, [
      'layers.0.layers.0.weight', 'layers.0.layers.0.bias', 'layers.0.layers.1.gamma', 'layers.0.layers.1.beta',
      'layers.0.layers.1.running_mean', 'layers.0.layers.1.running_var', 'layers.0.shortcut.weight', 'layers.0.shortcut.bias',
      'layers.1.layers.0.weight', 'layers.1.layers.0.bias', 'layers.3.weight', 'layers.3.bias',
    ]);
    assert.deepEqual(header['layers.0.shortcut.weight'].shape, [3, 2, 1, 1]);
    const decoded = decodeModel(bytes, 'res.safetensors');
    assert.deepEqual(bits(decoded.parameters), bits(model.parameters));
    assert.deepEqual(decoded.spec, spec);
  });

  test('optional fields stay absent; undefined preprocessing is stored as null', () => {
    const model: Model = { ...smallModel(), preprocessing: undefined, training: undefined, metrics: undefined };
    delete model.training;
    delete model.metrics;
    const decoded = decodeModel(encodeModel(model), 'm.safetensors');
    assert.equal(decoded.preprocessing, null);
    assert.ok(!('training' in decoded));
    assert.ok(!('metrics' in decoded));
  });

  test('a preset-sized model (mlp, 101 770 floats) round-trips, also from an unaligned buffer', () => {
    const spec = getPreset('mlp').spec;
    const model: Model = {
      spec,
      parameters: parameters(parameterCount(spec), 7),
      labels: Array.from({ length: 10 }, (_, i) => String(i)),
      featureNames: [],
      inputShape: [784],
      preprocessing: null,
    };
    const file = encodeModel(model);
    const unaligned = Buffer.alloc(file.length + 3);
    file.copy(unaligned, 3);
    const decoded = decodeModel(unaligned.subarray(3), 'mlp.safetensors');
    assert.deepEqual(bits(decoded.parameters), bits(model.parameters));
  });

  test('a preprocessing schema validates and types the preprocessing', () => {
    const schema = z.strictObject({ kind: z.enum(['none', 'zscore', 'minmax']), mean: z.array(z.number()), std: z.array(z.number()), imageShape: z.array(z.number()) });
    const decoded = decodeModel(encodeModel(smallModel()), 'm.safetensors', { preprocessingSchema: schema });
    assert.equal(decoded.preprocessing.kind, 'zscore');
    const bad = withMetadata((metadata) => (metadata.preprocessing.kind = 'log'));
    expectProblem(bad, /^m\.safetensors: metadata preprocessing\.kind: Invalid option/, { preprocessingSchema: schema });
  });
});

describe('byte layout', () => {
  test('LE u64 header length, JSON header padded with spaces to 8 bytes, contiguous little-endian F32 tensors', () => {
    const model = smallModel();
    const file = encodeModel(model);
    const headerLength = Number(file.readBigUInt64LE(0));
    assert.equal((8 + headerLength) % 8, 0, 'data starts on an 8-byte boundary');
    const headerText = file.subarray(8, 8 + headerLength).toString('utf8');
    assert.ok(headerText.startsWith('{'));
    assert.match(headerText, /} *$/);
    assert.ok(headerText.length - headerText.trimEnd().length < 8, 'at most 7 spaces of padding');
    const header = JSON.parse(headerText);

    // metadata: a map of strings holding one key
    assert.deepEqual(Object.keys(header.__metadata__), ['nnstudio']);
    assert.equal(typeof header.__metadata__.nnstudio, 'string');
    const metadata = JSON.parse(header.__metadata__.nnstudio);
    assert.equal(metadata.formatVersion, 1);
    assert.deepEqual(metadata.spec, model.spec);
    assert.deepEqual(metadata.labels, model.labels);

    // tensors: parameterTable order, offsets contiguous from 0
    const table = parameterTable(model.spec);
    assert.deepEqual(Object.keys(header), ['__metadata__', ...table.map((t) => t.name)]);
    let expectedBegin = 0;
    for (const tensor of table) {
      const entry = header[tensor.name];
      assert.deepEqual(entry, { dtype: 'F32', shape: tensor.shape, data_offsets: [expectedBegin, expectedBegin + tensor.size * 4] });
      expectedBegin += tensor.size * 4;
    }
    assert.deepEqual(table.map((t) => t.shape), [[8, 1, 2, 2], [8], [3, 32], [3]]);
    assert.equal(file.length, 8 + headerLength + 139 * 4);

    // the data section holds the floats little-endian
    const data = file.subarray(8 + headerLength);
    for (let i = 0; i < model.parameters.length; i++) {
      const expected = Buffer.alloc(4);
      expected.writeFloatLE(model.parameters[i]);
      assert.ok(data.subarray(4 * i, 4 * i + 4).equals(expected), `float ${i}`);
    }
  });

  test('the header is padded for every JSON length', () => {
    for (let extra = 0; extra < 8; extra++) {
      const model = { ...smallModel(), featureNames: ['x'.repeat(extra)] };
      const file = encodeModel(model);
      assert.equal((8 + Number(file.readBigUInt64LE(0))) % 8, 0);
      assert.deepEqual(decodeModel(file, 'm.safetensors').featureNames, model.featureNames);
    }
  });

  test('encoding refuses models that would not load back', () => {
    assert.throws(() => encodeModel({ ...smallModel(), parameters: new Float32Array(5) }), { message: 'the model has 5 parameters, its spec needs 139' });
    const nan = parameters(139);
    nan[100] = NaN;
    assert.throws(() => encodeModel({ ...smallModel(), parameters: nan }), { message: 'tensor layers.3.weight holds NaN at element 60' });
    assert.throws(() => encodeModel({ ...smallModel(), labels: ['a', 'b'] }), { message: 'the model has 2 class labels, its spec predicts 3 classes' });
    assert.throws(() => encodeModel({ ...smallModel(), inputShape: [15] }), { message: "input shape [15] does not match the spec's input [1,4,4]" });
  });
});

// ---- corrupt files ----

describe('corrupt files: the first problem, naming the file', () => {
  const good = encodeModel(smallModel());
  const goodHeaderLength = Number(good.readBigUInt64LE(0));
  const dataLength = 139 * 4; // 556

  test('too short for the header length', () => {
    expectProblem(good.subarray(0, 5), 'not a model file: 5 bytes, too short for a safetensors header length (8 bytes)');
    expectProblem(Buffer.alloc(0), 'not a model file: 0 bytes, too short for a safetensors header length (8 bytes)');
  });

  test('truncated in the header or in the data', () => {
    expectProblem(good.subarray(0, 20), `header length ${goodHeaderLength} runs past the end of the file (20 bytes): truncated, or not a safetensors file`);
    expectProblem(good.subarray(0, good.length - 4), 'tensor layers.3.bias: data_offsets [544,556] lie outside the data section (552 bytes): file truncated?');
    expectProblem(good.subarray(0, 8 + goodHeaderLength), 'tensor layers.0.weight: data_offsets [0,128] lie outside the data section (0 bytes): file truncated?');
  });

  test('extra bytes after the tensors', () => {
    expectProblem(Buffer.concat([good, Buffer.alloc(4)]), 'data section has 560 bytes, the tensors need 556 (extra bytes after the tensors)');
  });

  test('a corrupted header length', () => {
    const huge = Buffer.from(good);
    huge.writeBigUInt64LE(2n ** 40n, 0);
    expectProblem(huge, 'header length 1099511627776 is over the 100 MB limit: not a safetensors file, or a damaged one');
    const overLimit = Buffer.from(good);
    overLimit.writeBigUInt64LE(BigInt(maxHeaderBytes + 1), 0);
    expectProblem(overLimit, /header length 100000001 is over the 100 MB limit/);
    const longer = Buffer.from(good);
    longer.writeBigUInt64LE(BigInt(goodHeaderLength + 1000), 0);
    expectProblem(longer, `header length ${goodHeaderLength + 1000} runs past the end of the file (${good.length} bytes): truncated, or not a safetensors file`);
    const shorter = Buffer.from(good);
    shorter.writeBigUInt64LE(BigInt(goodHeaderLength - 16), 0);
    expectProblem(shorter, /^m\.safetensors: header is not valid JSON \(.+\): not a safetensors file, or a damaged one$/);
  });

  test('bad JSON, bad UTF-8, JSON that is not an object', () => {
    const raw = (body: Buffer) => {
      const length = Buffer.alloc(8);
      length.writeBigUInt64LE(BigInt(body.length));
      return Buffer.concat([length, body, Buffer.alloc(dataLength)]);
    };
    expectProblem(raw(Buffer.from('{"__metadata__": {"nnstudio": ')), /^m\.safetensors: header is not valid JSON \(.+\): not a safetensors file, or a damaged one$/);
    expectProblem(raw(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])), 'header is not valid UTF-8: not a safetensors file, or a damaged one');
    expectProblem(raw(Buffer.from('[1, 2, 3]')), 'header is not a JSON object: not a safetensors file');
    expectProblem(raw(Buffer.from('null    ')), 'header is not a JSON object: not a safetensors file');
  });

  test('not a safetensors file at all', () => {
    expectProblem(Buffer.from('sepal_length,sepal_width,species\n5.1,3.5,setosa\n'), /^m\.safetensors: header length \d+ is over the 100 MB limit: not a safetensors file, or a damaged one$/);
    expectProblem(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]), /over the 100 MB limit/);
    expectProblem(Buffer.alloc(64), /^m\.safetensors: header is not valid JSON/);
  });

  test('a safetensors file that is not an NN Studio model', () => {
    const { data } = split(good);
    const plain = { 'fc.weight': { dtype: 'F32', shape: [139], data_offsets: [0, dataLength] } };
    expectProblem(join(plain, data), 'header has no __metadata__: a safetensors file, but not an NN Studio model');
    expectProblem(join({ __metadata__: { format: 'pt' }, ...plain }, data), '__metadata__ has no "nnstudio" entry: a safetensors file, but not an NN Studio model');
    expectProblem(join({ __metadata__: { nnstudio: 5 }, ...plain }, data), '__metadata__ must map strings to strings');
    expectProblem(join({ __metadata__: [], ...plain }, data), '__metadata__ must map strings to strings');
  });

  test('bad metadata', () => {
    expectProblem(withHeader((header) => (header.__metadata__.nnstudio = '{formatVersion: 1')), /^m\.safetensors: metadata "nnstudio" is not valid JSON \(.+\)$/);
    expectProblem(withHeader((header) => (header.__metadata__.nnstudio = '[]')), 'metadata "nnstudio" is not a JSON object');
    expectProblem(withMetadata((metadata) => delete metadata.formatVersion), 'metadata has no formatVersion');
    expectProblem(withMetadata((metadata) => (metadata.formatVersion = 2)), 'format version 2 is not supported: this NN Studio reads version 1 (written by a newer NN Studio)');
    expectProblem(withMetadata((metadata) => (metadata.formatVersion = '1')), 'format version "1" is not supported: this NN Studio reads version 1');
    expectProblem(withMetadata((metadata) => (metadata.spec.layers[3].units = 0)), 'invalid model spec at layers.3.units: Too small: expected number to be >0');
    expectProblem(withMetadata((metadata) => delete metadata.spec), 'invalid model spec at spec: missing (expected object)');
    expectProblem(withMetadata((metadata) => (metadata.spec.input = [1, 1, 1])), 'invalid model spec: maxpool2d #1: window 2x2 larger than input 1x1');
    expectProblem(withMetadata((metadata) => (metadata.labels = ['a', 'b'])), 'metadata has 2 class labels, the spec predicts 3 classes');
    expectProblem(withMetadata((metadata) => (metadata.labels = [1, 2, 3])), 'metadata nnstudio.labels.0: Invalid input: expected string, received number');
    expectProblem(withMetadata((metadata) => delete metadata.featureNames), 'metadata nnstudio.featureNames: missing (expected array)');
    expectProblem(withMetadata((metadata) => (metadata.inputShape = [15])), "metadata inputShape [15] does not match the spec's input [1,4,4]");
    expectProblem(withMetadata((metadata) => delete metadata.preprocessing), 'metadata has no preprocessing entry');
    expectProblem(withMetadata((metadata) => (metadata.training.device = 3)), 'metadata nnstudio.training.device: Invalid input: expected string, received number');
  });

  test('wrong dtype or shape', () => {
    expectProblem(withHeader((header) => (header['layers.0.weight'].dtype = 'F16')), 'tensor layers.0.weight has dtype "F16", NN Studio models hold F32');
    expectProblem(withHeader((header) => (header['layers.0.weight'].shape = [4, 1, 2, 2])), 'tensor layers.0.weight has shape [4,1,2,2], the spec needs [8,1,2,2]');
    expectProblem(withHeader((header) => (header['layers.3.weight'].shape = [32, 3])), 'tensor layers.3.weight has shape [32,3], the spec needs [3,32]');
    expectProblem(withHeader((header) => (header['layers.3.bias'].shape = 3)), 'tensor layers.3.bias has a malformed shape 3');
    expectProblem(withHeader((header) => (header['layers.3.bias'] = 'x')), 'tensor layers.3.bias: its header entry is not an object');
  });

  test('offsets outside, malformed, of the wrong span, or overlapping', () => {
    expectProblem(withHeader((header) => (header['layers.0.weight'].data_offsets = [10_000, 10_128])), 'tensor layers.0.weight: data_offsets [10000,10128] lie outside the data section (556 bytes): file truncated?');
    expectProblem(withHeader((header) => (header['layers.0.weight'].data_offsets = [128, 0])), 'tensor layers.0.weight has malformed data_offsets [128,0]');
    expectProblem(withHeader((header) => (header['layers.0.weight'].data_offsets = [-4, 124])), 'tensor layers.0.weight has malformed data_offsets [-4,124]');
    expectProblem(withHeader((header) => (header['layers.0.weight'].data_offsets = [0])), 'tensor layers.0.weight has malformed data_offsets [0]');
    expectProblem(withHeader((header) => (header['layers.0.weight'].data_offsets = [0, 124])), 'tensor layers.0.weight: data_offsets [0,124] span 124 bytes, its shape needs 128');
    expectProblem(withHeader((header) => (header['layers.0.bias'].data_offsets = [0, 32])), 'tensors layers.0.weight and layers.0.bias overlap');
  });

  test('missing or unexpected tensors', () => {
    expectProblem(withHeader((header) => delete header['layers.3.weight']), 'tensor layers.3.weight is missing');
    expectProblem(
      withHeader((header) => (header['layers.9.weight'] = { dtype: 'F32', shape: [1], data_offsets: [0, 4] })),
      'unexpected tensor layers.9.weight: the spec has no such parameter',
    );
  });

  test('non-finite weights', () => {
    const { header, data } = split(good);
    const nan = Buffer.from(data);
    nan.writeFloatLE(NaN, (40 + 5) * 4); // layers.3.weight element 5
    expectProblem(join(header, nan), 'tensor layers.3.weight holds NaN at element 5');
    const inf = Buffer.from(data);
    inf.writeFloatLE(-Infinity, 32 * 4 + 2 * 4); // layers.0.bias element 2
    expectProblem(join(header, inf), 'tensor layers.0.bias holds -Infinity at element 2');
  });

  test('tensors may be stored in any order as long as they tile the data section', () => {
    // the safetensors spec allows any order; swap the two dense tensors' places in the data section
    const model = smallModel();
    const { header, data } = split(encodeModel(model));
    const weight = data.subarray(160, 544);
    const bias = data.subarray(544, 556);
    header['layers.3.bias'].data_offsets = [160, 172];
    header['layers.3.weight'].data_offsets = [172, 556];
    const decoded = decodeModel(join(header, Buffer.concat([data.subarray(0, 160), bias, weight])), 'm.safetensors');
    assert.deepEqual(bits(decoded.parameters), bits(model.parameters));
  });
});

// ---- files on disk ----

describe('saveModel and loadModel', () => {
  test('save, overwrite and load; no temporary files left', async () => {
    const folder = freshFolder();
    const target = path.join(folder, 'm.safetensors');
    await saveModel(target, smallModel());
    const second = { ...smallModel(), parameters: parameters(139, 99) };
    await saveModel(target, second);
    assert.deepEqual(fs.readdirSync(folder), ['m.safetensors']);
    const loaded = await loadModel(target);
    assert.deepEqual(bits(loaded.parameters), bits(second.parameters));
    assert.ok(fs.readFileSync(target).equals(encodeModel(second)));
  });

  test('a missing folder fails with a clear message and creates nothing', async () => {
    const folder = freshFolder();
    const target = path.join(folder, 'missing', 'm.safetensors');
    await assert.rejects(saveModel(target, smallModel()), {
      name: 'ModelFileError',
      message: `cannot save model to ${target}: folder ${path.join(folder, 'missing')} does not exist`,
    });
    assert.deepEqual(fs.readdirSync(folder), []);
  });

  test('a target that is a folder fails after writing: the temporary file is removed', async () => {
    const folder = freshFolder();
    const target = path.join(folder, 'm.safetensors');
    fs.mkdirSync(target);
    fs.writeFileSync(path.join(target, 'keep'), 'x');
    await assert.rejects(saveModel(target, smallModel()), { message: `cannot save model to ${target}: ${target} is a folder` });
    assert.deepEqual(fs.readdirSync(folder), ['m.safetensors']);
  });

  test('an invalid model leaves the previous file byte-identical', async () => {
    const folder = freshFolder();
    const target = path.join(folder, 'm.safetensors');
    await saveModel(target, smallModel());
    const before = fs.readFileSync(target);
    await assert.rejects(saveModel(target, { ...smallModel(), parameters: new Float32Array(5) }), {
      message: `cannot save model to ${target}: the model has 5 parameters, its spec needs 139`,
    });
    assert.ok(fs.readFileSync(target).equals(before));
    assert.deepEqual(fs.readdirSync(folder), ['m.safetensors']);
  });

  test('a read-only folder fails and leaves the previous file byte-identical', async (t) => {
    const folder = freshFolder();
    const target = path.join(folder, 'm.safetensors');
    await saveModel(target, smallModel());
    const before = fs.readFileSync(target);
    fs.chmodSync(folder, 0o555);
    try {
      try {
        fs.writeFileSync(path.join(folder, 'probe'), '');
        fs.rmSync(path.join(folder, 'probe'));
        t.skip('permissions are not enforced for this user (root); covered by the write-failure test below');
        return;
      } catch {
        // read-only as intended
      }
      await assert.rejects(saveModel(target, { ...smallModel(), parameters: parameters(139, 5) }), {
        message: `cannot save model to ${target}: permission denied in ${folder}`,
      });
      assert.ok(fs.readFileSync(target).equals(before));
      assert.deepEqual(fs.readdirSync(folder), ['m.safetensors']);
    } finally {
      fs.chmodSync(folder, 0o755);
    }
  });

  test('a write that fails midway (file size limit) leaves the previous file byte-identical', async (t) => {
    if (process.platform !== 'linux' || !fs.existsSync('/bin/bash')) return t.skip('needs bash and RLIMIT_FSIZE');
    const folder = freshFolder();
    const target = path.join(folder, 'm.safetensors');
    await saveModel(target, smallModel());
    const before = fs.readFileSync(target);
    // a 400 KB model written under a 64 KB file size limit: write() fails with EFBIG after the temp file exists
    const script = `
      const { saveModel } = require(${JSON.stringify(require.resolve('../../../app/core/model/modelFile'))});
      const { getPreset } = require(${JSON.stringify(require.resolve('../../../app/core/model/presets'))});
      const spec = getPreset('mlp').spec;
      const model = { spec, parameters: new Float32Array(101770), labels: Array.from({ length: 10 }, String),
        featureNames: [], inputShape: [1, 28, 28], preprocessing: null };
      saveModel(process.argv[1], model).then(
        () => { console.log('saved'); process.exit(0); },
        (error) => { console.log(error.message); process.exit(3); });`;
    const result = spawnSync('/bin/bash', ['-c', 'trap "" XFSZ; ulimit -f 64; exec "$0" -e "$1" "$2"', process.execPath, script, target], {
      encoding: 'utf8',
    });
    assert.equal(result.status, 3, `child: ${result.stdout}${result.stderr}`);
    assert.equal(result.stdout.trim(), `cannot save model to ${target}: the file is larger than this system allows`);
    assert.ok(fs.readFileSync(target).equals(before));
    assert.deepEqual(fs.readdirSync(folder), ['m.safetensors']);
  });

  test('loading names the path: missing file, corrupt file', async () => {
    const folder = freshFolder();
    const missing = path.join(folder, 'nope.safetensors');
    await assert.rejects(loadModel(missing), { name: 'ModelFileError', message: `${missing}: cannot read: no such file` });
    const corrupt = path.join(folder, 'corrupt.safetensors');
    fs.writeFileSync(corrupt, encodeModel(smallModel()).subarray(0, 100));
    await assert.rejects(loadModel(corrupt), { message: new RegExp(`^${corrupt.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: header length \\d+ runs past the end of the file \\(100 bytes\\)`) });
  });
});

// ---- Python's safetensors, when present ----

describe('interoperability with Python safetensors', () => {
  const python = process.env.NNSTUDIO_PYTHON ?? 'python3';
  const probe = spawnSync(python, ['-c', 'import safetensors.numpy, numpy'], { encoding: 'utf8' });
  const available = probe.status === 0;

  test('safetensors.numpy.load_file and safe_open().metadata() read the file', { skip: available ? false : `${python} has no safetensors module` }, async () => {
    const folder = freshFolder();
    const target = path.join(folder, 'm.safetensors');
    const model = smallModel();
    await saveModel(target, model);
    const script = [
      'import json, sys',
      'from safetensors import safe_open',
      'from safetensors.numpy import load_file',
      'tensors = load_file(sys.argv[1])',
      'with safe_open(sys.argv[1], framework="numpy") as f:',
      '    metadata = f.metadata()',
      'out = {name: {"dtype": str(t.dtype), "shape": list(t.shape), "bits": t.reshape(-1).view("<u4").tolist()} for name, t in tensors.items()}',
      'print(json.dumps({"tensors": out, "metadata": metadata}))',
      // the reference writer orders and pads in its own way; we must read its output too
      'from safetensors.numpy import save_file',
      'save_file(tensors, sys.argv[1] + ".py", metadata=metadata)',
    ].join('\n');
    const result = spawnSync(python, ['-c', script, target], { encoding: 'utf8' });
    assert.equal(result.status, 0, result.stderr);
    const read = JSON.parse(result.stdout);
    assert.deepEqual(Object.keys(read.metadata), ['nnstudio']);
    const metadata = JSON.parse(read.metadata.nnstudio);
    assert.deepEqual(metadata.spec, model.spec);
    assert.deepEqual(metadata.labels, model.labels);
    for (const tensor of parameterTable(model.spec)) {
      const entry = read.tensors[tensor.name];
      assert.equal(entry.dtype, 'float32');
      assert.deepEqual(entry.shape, tensor.shape);
      assert.deepEqual(entry.bits, bits(model.parameters.subarray(tensor.offset, tensor.offset + tensor.size)));
    }
    assert.equal(Object.keys(read.tensors).length, 4);
    const rewritten = await loadModel(`${target}.py`);
    assert.deepEqual(bits(rewritten.parameters), bits(model.parameters));
    assert.deepEqual(rewritten.labels, model.labels);
  });
});
