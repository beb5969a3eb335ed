// --precision (issue 16): the CUDA tensor-core products' arithmetic. On the CPU a TF32 request trains in FP32, says
// so in the plan, and the model records what it computed; a checkpoint keeps the asked precision for its
// resume; bad values and a --precision beside --resume are one clear line; the addon refuses unknown names.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';
import { loadModel } from '../../../app/core/model/modelFile';
import { effectivePrecision, precisionNotes } from '../../../app/core/model/precision';
import { precisionLabel } from '../../../app/core/model/precisionLabel';
import { errorLine, runCli, scratchDir } from './cliHarness';
import * as engine from '../../../app/engine';

const small = ['--data', 'mnist', '--limit', '300', '--layers', 'conv:4x3:relu,maxpool:2,dense:10', '--batch-size', '64', '--device', 'cpu', '--threads', '1', '--no-history'];

test('tf32 asked on the CPU: FP32 is computed, the plan says so, the model records fp32', async () => {
  const dir = scratchDir('precision');
  const run = await runCli(['train', ...small, '--epochs', '1', '--precision', 'tf32', '--checkpoint', 'run.ckpt', '--out', 'm.safetensors'], dir);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr + run.stdout, /TF32 applies to the GPU's tensor-core products: the CPU trains in FP32/);
  const model = await loadModel(path.join(dir, 'm.safetensors'));
  assert.equal((model.training?.options as Record<string, unknown>).precision, 'fp32');
  const again = await runCli(['train', '--resume', 'run.ckpt', '--epochs', '2', '--precision', 'fp32', '--device', 'cpu', '--out', 'r.safetensors', '--no-history'], dir);
  assert.notEqual(again.code, 0);
  assert.match(errorLine(again), /--resume continues the checkpoint's run as it was: leave out --precision/);
  const bad = await runCli(['train', ...small, '--precision', 'bf16', '--out', 'x.safetensors'], dir);
  assert.notEqual(bad.code, 0);
  assert.match(errorLine(bad), /--precision.*bf16.*(fp32|choices)/i);
});

test('a GPU without BF16 (Turing): the plan says mixed takes FP16 with loss scaling and TF32 runs as FP32', () => {
  const turing = { name: 'Tesla T4', computeCapability: '7.5' }, hopper = { name: 'NVIDIA H100', computeCapability: '9.0' };
  assert.match(precisionNotes(undefined, 'cuda', turing).join(), /Tesla T4 has no BF16 tensor cores: mixed precision takes FP16 products with dynamic loss scaling/);
  assert.match(precisionNotes('mixed', 'cuda', turing).join(), /FP16 products/);
  assert.match(precisionNotes('tf32', 'cuda', turing).join(), /Tesla T4 has no TF32 tensor cores: TF32 runs as FP32/);
  assert.deepEqual(precisionNotes('fp32', 'cuda', turing), []);
  assert.deepEqual(precisionNotes(undefined, 'cuda', hopper), []);
  assert.deepEqual(precisionNotes('mixed', 'cuda'), [], 'no GPU information: no note');
  assert.match(precisionNotes('mixed', 'cpu', turing).join(), /^Mixed precision applies to the GPU's tensor-core products: the CPU trains in FP32$/);
});

test('the effective precision: the asked one on CUDA, FP32 on the CPU; a note only where they differ', () => {
  assert.equal(effectivePrecision('tf32', 'cuda'), 'tf32');
  assert.equal(effectivePrecision(undefined, 'cuda'), 'mixed', 'mixed is the GPU\'s default');
  assert.equal(effectivePrecision('fp32', 'cuda'), 'fp32');
  assert.equal(effectivePrecision(undefined, 'cpu'), 'fp32');
  assert.equal(effectivePrecision('tf32', 'cpu'), 'fp32');
  assert.deepEqual(precisionNotes('fp32', 'cpu'), []);
  assert.deepEqual(precisionNotes('tf32', 'cuda'), []);
  assert.equal(precisionNotes('tf32', 'cpu').length, 1);
  assert.equal(effectivePrecision('mixed', 'cuda'), 'mixed');
  assert.deepEqual(['mixed', 'tf32', 'fp32'].map((p) => precisionLabel(p as 'mixed')), ['mixed (16-bit)', 'TF32', 'FP32']);
  assert.equal(effectivePrecision('mixed', 'cpu'), 'fp32');
  assert.deepEqual(precisionNotes('mixed', 'cuda'), []);
  assert.match(precisionNotes('mixed', 'cpu')[0], /^Mixed precision applies to the GPU's tensor-core products: the CPU trains in FP32$/);
});

test('mixed asked on the CPU: FP32 is computed and recorded, the plan says so', async () => {
  const dir = scratchDir('precision-mixed');
  const run = await runCli(['train', ...small, '--epochs', '1', '--precision', 'mixed', '--out', 'm.safetensors'], dir);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr + run.stdout, /Mixed precision applies to the GPU's tensor-core products: the CPU trains in FP32/);
  const model = await loadModel(path.join(dir, 'm.safetensors'));
  assert.equal((model.training?.options as Record<string, unknown>).precision, 'fp32');
});

test('the addon refuses a precision it does not know, naming the option', () => {
  const spec = { input: [4], layers: [{ kind: 'dense', units: 2 }], loss: 'softmax_cross_entropy', optimizer: { kind: 'sgd', lr: 0.1 }, seed: 1 };
  const data = { features: new Float32Array(8), labels: new Int32Array([0, 1]), count: 2, featureShape: [4] };
  assert.throws(() => engine.train(spec as never, data as never, undefined, { epochs: 1, batchSize: 2, device: 'cpu', precision: 'bf16' as never }),
    /options\.precision must be "fp32", "tf32" or "mixed"/);
});
