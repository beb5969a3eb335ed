// Checkpoint files: a round trip keeps every bit (weights, Adam's m and v, best weights, the exact history,
// the run record); a plain model file still reads the model part; damaged checkpoints fail naming the file.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeCheckpoint, encodeCheckpoint, type Checkpoint } from '../../../app/core/model/checkpointFile';
import { decodeModel, encodeModel, ModelFileError } from '../../../app/core/model/modelFile';
import { parameterCount } from '../../../app/core/model/shapes';
import { parseModelSpec } from '../../../app/core/model/spec';

const spec = parseModelSpec({
  input: [3],
  layers: [{ kind: 'dense', units: 4, activation: 'relu' }, { kind: 'dense', units: 2 }],
  loss: 'softmax_cross_entropy',
  optimizer: { kind: 'adam', lr: 0.01 },
  seed: 1,
});
const P = parameterCount(spec); // 3*4+4 + 4*2+2 = 26

const ramp = (count: number, scale: number) => Float32Array.from({ length: count }, (_, i) => Math.fround((i + 1) * scale));

function checkpoint(): Checkpoint {
  const parameters = ramp(P, 0.1);
  return {
    model: { spec, parameters, labels: ['a', 'b'], featureNames: ['x', 'y', 'z'], inputShape: [3], preprocessing: { kind: 'none' } },
    state: {
      epoch: 2, step: 14, seed: '18446744073709551615', learningRate: 0.005,
      parameters, optimizerState: ramp(2 * P, 1e-3), bestParameters: ramp(P, -0.5),
      history: [
        { epoch: 1, trainLoss: 0.6931471805599453, trainAccuracy: 0.5, validationLoss: 0.1 + 0.2, validationAccuracy: 0.75, seconds: 0.01, learningRate: 0.009999999776482582 },
        { epoch: 2, trainLoss: 0.5, trainAccuracy: 0.625, validationLoss: Number.POSITIVE_INFINITY, validationAccuracy: 0.5, seconds: 0.01, learningRate: 0.005 },
      ],
    },
    run: { data: { kind: 'mnist', split: 'train' }, seed: 7 },
  };
}

const bits = (values: Float32Array) => Buffer.from(values.buffer, values.byteOffset, values.byteLength);

describe('checkpoint files', () => {
  test('round trip: every tensor bit, the exact history, the run record', () => {
    const original = checkpoint();
    const back = decodeCheckpoint(encodeCheckpoint(original), 'run.ckpt');
    assert.deepEqual(bits(back.state.parameters), bits(original.state.parameters));
    assert.deepEqual(bits(back.state.optimizerState), bits(original.state.optimizerState));
    assert.deepEqual(bits(back.state.bestParameters!), bits(original.state.bestParameters!));
    assert.equal(back.state.seed, '18446744073709551615');
    assert.equal(back.state.history[0].validationLoss, 0.1 + 0.2, 'doubles survive exactly');
    assert.equal(back.state.history[1].validationLoss, Number.MAX_VALUE, 'a non-finite loss comes back as the largest double');
    assert.deepEqual(back.run, original.run);
    assert.deepEqual(back.model.labels, ['a', 'b']);
  });

  test('a checkpoint is not a model file and a model file is not a checkpoint', () => {
    const bytes = encodeCheckpoint(checkpoint());
    assert.throws(() => decodeModel(bytes, 'run.ckpt'), /run\.ckpt: unexpected tensor optimizer\.m\.layers\.0\.weight/);
    const model = encodeModel(checkpoint().model);
    assert.throws(() => decodeCheckpoint(model, 'm.safetensors'), /m\.safetensors: __metadata__ has no "nnstudio_checkpoint" entry/);
  });

  test('damaged checkpoints fail naming the file and the problem', () => {
    const rewrite = (edit: (block: Record<string, unknown>) => void): Buffer => {
      const bytes = encodeCheckpoint(checkpoint());
      const headerLength = Number(bytes.readBigUInt64LE(0));
      const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8'));
      const block = JSON.parse(header.__metadata__.nnstudio_checkpoint);
      edit(block);
      header.__metadata__.nnstudio_checkpoint = JSON.stringify(block);
      let text = JSON.stringify(header);
      text += ' '.repeat((8 - ((text.length) % 8)) % 8);
      const out = Buffer.alloc(8);
      out.writeBigUInt64LE(BigInt(Buffer.byteLength(text)));
      return Buffer.concat([out, Buffer.from(text), bytes.subarray(8 + headerLength)]);
    };
    assert.throws(() => decodeCheckpoint(rewrite((b) => { b.optimizer = 'sgd'; }), 'a.ckpt'), /a\.ckpt: the training state is for sgd, the model's optimizer is adam/);
    assert.throws(() => decodeCheckpoint(rewrite((b) => { b.epoch = 3; }), 'b.ckpt'), /b\.ckpt: the training state has 2 epochs of history for 3 epochs/);
    assert.throws(() => decodeCheckpoint(rewrite((b) => { b.epoch = 1; }), 'b.ckpt'), /b\.ckpt: the training state has 2 epochs of history for 1 epoch$/);
    assert.throws(() => decodeCheckpoint(rewrite((b) => { b.seed = '-1'; }), 'c.ckpt'), /c\.ckpt: metadata nnstudio_checkpoint\.seed: must be a decimal integer/);
    assert.throws(() => decodeCheckpoint(rewrite((b) => { b.hasBest = false; }), 'd.ckpt'), /d\.ckpt: unexpected tensor best\./);
    const bytes = encodeCheckpoint(checkpoint());
    assert.throws(() => decodeCheckpoint(bytes.subarray(0, bytes.length - 4), 'e.ckpt'), (error: unknown) =>
      error instanceof ModelFileError && error.file === 'e.ckpt' && /e\.ckpt: tensor best\..* outside the data section/.test(error.message));
  });
});
