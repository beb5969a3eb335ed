// The training recipe's options as the app checks them: the optimizers and label smoothing in the spec
// schema, the augmentation schema and the CLI's --augment syntax, the EMA range, and checkpoints that
// carry a weight average.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { decodeCheckpoint, encodeCheckpoint, type Checkpoint } from '../../../app/core/model/checkpointFile';
import { parseModelSpec } from '../../../app/core/model/spec';
import { augmentationSchema, emaSchema, parseAugmentation } from '../../../app/core/model/trainingControl';

const base = { input: [4], layers: [{ kind: 'dense', units: 3 }], loss: 'softmax_cross_entropy', seed: 0 };

test('adamw, sgd with nesterov and decoupled decay, label smoothing parse', () => {
  const adamw = parseModelSpec({ ...base, labelSmoothing: 0.1, optimizer: { kind: 'adamw', lr: 0.001, weightDecay: 0.05 } });
  assert.equal(adamw.optimizer.kind, 'adamw');
  assert.equal(adamw.labelSmoothing, 0.1);
  const sgd = parseModelSpec({ ...base, optimizer: { kind: 'sgd', lr: 0.1, momentum: 0.9, nesterov: true, weightDecay: 5e-4, decoupledWeightDecay: true } });
  assert.equal(sgd.optimizer.kind === 'sgd' && sgd.optimizer.nesterov, true);
});

test('the recipe fields refuse what the engine refuses', () => {
  assert.throws(() => parseModelSpec({ ...base, optimizer: { kind: 'sgd', lr: 0.1, nesterov: true } }), /nesterov needs a momentum > 0/);
  assert.throws(() => parseModelSpec({ ...base, labelSmoothing: 0.7, optimizer: { kind: 'adam', lr: 0.1 } }), /labelSmoothing/);
  assert.throws(() => parseModelSpec({ ...base, loss: 'mse', labelSmoothing: 0.1, optimizer: { kind: 'adam', lr: 0.1 } }), /labelSmoothing needs loss softmax_cross_entropy/);
});

test('--augment syntax', () => {
  assert.deepEqual(parseAugmentation('translate=2,flip,rotate=10,scale=0.1,erase=0.25'), { translate: 2, flip: true, rotate: 10, scale: 0.1, erase: 0.25 });
  assert.deepEqual(parseAugmentation(' translate = 3 , flip=false '), { translate: 3, flip: false });
  assert.throws(() => parseAugmentation('shear=3'), /unknown item "shear"/);
  assert.throws(() => parseAugmentation('rotate'), /rotate needs a number/);
  assert.throws(() => parseAugmentation('translate=1.5'), /translate/);
  assert.throws(() => parseAugmentation('scale=0.9'), /scale/);
  assert.equal(augmentationSchema.safeParse({ flip: true, blur: 1 }).success, false);
});

test('ema is a decay strictly between 0 and 1', () => {
  assert.equal(emaSchema.safeParse(0.999).success, true);
  assert.equal(emaSchema.safeParse(1).success, false);
  assert.equal(emaSchema.safeParse(0).success, false);
});

test('a checkpoint of an AdamW run with a weight average keeps both, bit for bit', () => {
  const spec = parseModelSpec({ input: [3], layers: [{ kind: 'dense', units: 2 }], loss: 'softmax_cross_entropy', optimizer: { kind: 'adamw', lr: 0.01, weightDecay: 0.05 }, seed: 1 });
  const P = 3 * 2 + 2;
  const ramp = (count: number, scale: number) => Float32Array.from({ length: count }, (_, i) => Math.fround((i + 1) * scale));
  const parameters = ramp(P, 0.1);
  const original: Checkpoint = {
    model: { spec, parameters, labels: ['a', 'b'], featureNames: ['x', 'y', 'z'], inputShape: [3], preprocessing: { kind: 'none' } },
    state: {
      epoch: 1, step: 7, seed: '3', learningRate: 0.01, parameters, optimizerState: ramp(2 * P, 1e-3), emaParameters: ramp(P, -0.25),
      history: [{ epoch: 1, trainLoss: 0.5, trainAccuracy: 0.5, seconds: 0.01, learningRate: 0.01 }],
    },
    run: {},
  };
  const back = decodeCheckpoint(encodeCheckpoint(original), 'run.ckpt');
  assert.deepEqual(Array.from(back.state.emaParameters!), Array.from(original.state.emaParameters!));
  assert.deepEqual(Array.from(back.state.optimizerState), Array.from(original.state.optimizerState));
  const plain = decodeCheckpoint(encodeCheckpoint({ ...original, state: { ...original.state, emaParameters: undefined } }), 'run.ckpt');
  assert.equal(plain.state.emaParameters, undefined);
});
