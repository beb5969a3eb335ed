// The training recipe from the CLI: AdamW, SGD with Nesterov and decoupled decay, label smoothing, image
// augmentation and a weight average reach the model's spec and the run's options; a checkpoint of an
// augmented run with a weight average resumes exactly; eval --tta averages shifted views; bad values are one
// clear line.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { loadModel } from '../../../app/core/model/modelFile';
import { errorLine, runCli, scratchDir } from './cliHarness';

const small = ['--data', 'mnist', '--limit', '600', '--layers', 'conv:4x3:relu,maxpool:2,dense:10', '--batch-size', '64', '--device', 'cpu', '--threads', '1', '--no-history', '--json'];

test('adamw, label smoothing, augmentation and a weight average reach the spec and the run; eval --tta answers', async () => {
  const dir = scratchDir('recipe');
  const trained = await runCli(['train', ...small, '--epochs', '2', '--optimizer', 'adamw', '--weight-decay', '0.05', '--label-smoothing', '0.1',
    '--augment', 'translate=2,rotate=10,scale=0.1,erase=0.25', '--ema', '0.9', '--out', 'm.safetensors'], dir);
  assert.equal(trained.code, 0, trained.stderr);
  const model = await loadModel(path.join(dir, 'm.safetensors'));
  assert.equal(model.spec.optimizer.kind, 'adamw');
  assert.equal(model.spec.optimizer.weightDecay, 0.05);
  assert.equal(model.spec.labelSmoothing, 0.1);
  const options = model.training?.options as Record<string, unknown>;
  assert.deepEqual(options.augment, { translate: 2, rotate: 10, scale: 0.1, erase: 0.25 });
  assert.equal(options.ema, 0.9);
  const plain = await runCli(['eval', '--model', 'm.safetensors', '--data', 'mnist', '--limit', '200', '--device', 'cpu', '--json'], dir);
  const tta = await runCli(['eval', '--model', 'm.safetensors', '--data', 'mnist', '--limit', '200', '--device', 'cpu', '--json', '--tta'], dir);
  assert.equal(plain.code, 0, plain.stderr);
  assert.equal(tta.code, 0, tta.stderr);
  assert.notEqual(JSON.parse(tta.stdout).loss, JSON.parse(plain.stdout).loss, 'test-time augmentation changes the averaged probabilities');
});

test('SGD with Nesterov momentum and decoupled decay; a checkpoint with augmentation and a weight average resumes exactly', async () => {
  const dir = scratchDir('recipe-resume');
  const flags = [...small, '--optimizer', 'sgd', '--lr', '0.05', '--momentum', '0.9', '--nesterov', '--weight-decay', '0.001', '--decoupled-decay',
    '--augment', 'translate=1,erase=0.5', '--ema', '0.8'];
  const straight = await runCli(['train', ...flags, '--epochs', '2', '--out', 'straight.safetensors'], dir);
  assert.equal(straight.code, 0, straight.stderr);
  const first = await runCli(['train', ...flags, '--epochs', '1', '--checkpoint', 'run.ckpt', '--out', 'half.safetensors'], dir);
  assert.equal(first.code, 0, first.stderr);
  const resumed = await runCli(['train', '--resume', 'run.ckpt', '--epochs', '2', '--device', 'cpu', '--threads', '1', '--no-history', '--json', '--out', 'resumed.safetensors'], dir);
  assert.equal(resumed.code, 0, resumed.stderr);
  const a = await loadModel(path.join(dir, 'straight.safetensors'));
  const b = await loadModel(path.join(dir, 'resumed.safetensors'));
  assert.equal(a.spec.optimizer.kind, 'sgd');
  assert.equal((a.spec.optimizer as { nesterov?: boolean }).nesterov, true);
  assert.equal((a.spec.optimizer as { decoupledWeightDecay?: boolean }).decoupledWeightDecay, true);
  assert.ok(Buffer.from(a.parameters.buffer).equals(Buffer.from(b.parameters.buffer)), '1 + 1 epochs equal 2, bit for bit (the averaged weights are the model)');
  fs.rmSync(dir, { recursive: true, force: true });
});

test('bad recipe values are one clear line', async () => {
  const dir = scratchDir('recipe-bad');
  const cases: [string[], RegExp][] = [
    [['--augment', 'translate=2,spin=3'], /unknown item "spin"/],
    [['--augment', 'rotate=400'], /rotate/],
    [['--ema', '1.5'], /--ema takes a decay between 0 and 1/],
    [['--label-smoothing', '0.9'], /--label-smoothing takes a number from 0 to 0.5/],
    [['--optimizer', 'adam', '--nesterov'], /--nesterov and --decoupled-decay apply to --optimizer sgd only/],
  ];
  for (const [extra, expected] of cases) {
    const result = await runCli(['train', ...small, '--epochs', '1', ...extra, '--out', 'x.safetensors'], dir);
    assert.notEqual(result.code, 0, extra.join(' '));
    assert.match(errorLine(result), expected);
  }
  const tables = await runCli(['train', '--data', path.join(__dirname, '..', '..', '..', '..', 'resources', 'samples', 'iris.csv'), '--augment', 'translate=1', '--epochs', '1', '--device', 'cpu', '--no-history', '--out', 'x.safetensors'], dir);
  assert.match(errorLine(tables), /augmentation applies to images/);
});

test('--gpus: unreadable choices and several GPUs for a CPU run are one clear line', async () => {
  const dir = scratchDir('recipe-gpus');
  const unreadable = await runCli(['train', ...small, '--epochs', '1', '--gpus', 'two', '--out', 'g.safetensors'], dir);
  assert.notEqual(unreadable.code, 0);
  assert.match(errorLine(unreadable), /--gpus takes all, a count \(2: the first two\) or GPU numbers such as 0,1; got "two"/);
  const onCpu = await runCli(['train', ...small, '--epochs', '1', '--gpus', '0,1', '--out', 'g.safetensors'], dir);
  assert.notEqual(onCpu.code, 0);
  assert.match(errorLine(onCpu), /several GPUs need the CUDA device \(--device cuda\); this run trains on the CPU/);
});
