// Checkpoints through the real CLI: crash recovery (SIGKILL mid-epoch after the first checkpoint, then
// --resume) ends in the very weights of an uninterrupted run, bit for bit on the CPU with --threads 1;
// --lr-schedule and --early-stop reach the engine; bad flags and bad checkpoints are clear errors.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { decodeCheckpoint, saveCheckpoint } from '../../../app/core/model/checkpointFile';
import { loadModel } from '../../../app/core/model/modelFile';
import { parseRunRecord } from '../../../app/services/runRecord';
import { resumeDevice } from '../../../app/services/trainingSetup';
import { errorLine, repoRoot, runCli, scratchDir } from './cliHarness';

const iris = path.join(repoRoot, 'resources', 'samples', 'iris.csv');
const bin = path.join(repoRoot, 'bin', 'nnstudio.js');

// Adam with dropout and shuffling, one thread: every reduction in one order, so runs repeat bit for bit.
const runArgs = [
  'train', '--data', 'mnist', '--limit', '16000', '--layers', 'dense:128:relu,dropout:0.2,dense:10', '--optimizer', 'adam',
  '--lr', '0.001', '--batch-size', '32', '--epochs', '3', '--seed', '5', '--device', 'cpu', '--threads', '1',
  '--lr-schedule', 'cosine:0.0001',
];

function sameBits(a: Float32Array, b: Float32Array): boolean {
  return a.length === b.length && Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)) === 0;
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('crash recovery: SIGKILL mid-epoch, --resume, the same weights as an uninterrupted run', async () => {
  const dir = scratchDir('crash');
  const checkpoint = path.join(dir, 'run.checkpoint.safetensors');

  // ---- the interrupted run: killed as soon as the first checkpoint exists (early in epoch 2) ----
  const child = spawn(process.execPath, [bin, ...runArgs, '--checkpoint', checkpoint, '--out', 'never.safetensors'], { cwd: dir });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  await waitFor(() => fs.existsSync(checkpoint), 120_000);
  child.kill('SIGKILL');
  assert.equal(await exited, 'SIGKILL', stderr);
  assert.ok(!fs.existsSync(path.join(dir, 'never.safetensors')), 'the killed run saved no model');
  const left = decodeCheckpoint(fs.readFileSync(checkpoint), checkpoint);
  assert.ok(left.state.epoch >= 1 && left.state.epoch < 3, `killed mid-run: the checkpoint holds epoch ${left.state.epoch} of 3`);

  // ---- resume to the end ----
  const resumed = await runCli(['train', '--resume', checkpoint, '--threads', '1', '--device', 'cpu', '--out', 'resumed.safetensors', '--json'], dir, 240_000);
  assert.equal(resumed.code, 0, resumed.stderr);
  const resumedResult = JSON.parse(resumed.stdout);
  assert.equal(resumedResult.status, 'completed');
  assert.equal(resumedResult.history.length, 3, 'the resumed run reports all 3 epochs');
  // The resumed run is recorded in the run history with the data its checkpoint names.
  assert.match(resumedResult.runId ?? '', /^\d{8}-\d{6}-[0-9a-f]{8}$/, 'a run id');
  const shown = await runCli(['runs', 'show', resumedResult.runId, '--json'], dir);
  assert.equal(shown.code, 0, shown.stderr);
  assert.equal(JSON.parse(shown.stdout).history.length, 3);

  // ---- the uninterrupted run ----
  const full = await runCli([...runArgs, '--out', 'full.safetensors', '--json'], dir, 240_000);
  assert.equal(full.code, 0, full.stderr);
  const fullResult = JSON.parse(full.stdout);

  const a = await loadModel(path.join(dir, 'resumed.safetensors'));
  const b = await loadModel(path.join(dir, 'full.safetensors'));
  assert.ok(sameBits(a.parameters, b.parameters), 'resumed weights equal the uninterrupted run bit for bit');
  for (let i = 0; i < 3; i++) {
    assert.equal(resumedResult.history[i].trainLoss, fullResult.history[i].trainLoss, `epoch ${i + 1} train loss`);
    assert.equal(resumedResult.history[i].validationLoss, fullResult.history[i].validationLoss, `epoch ${i + 1} validation loss`);
    assert.equal(resumedResult.history[i].learningRate, fullResult.history[i].learningRate, `epoch ${i + 1} learning rate`);
  }
  assert.equal(resumedResult.test.accuracy, fullResult.test.accuracy);
  // the cosine schedule decays: the last epoch's rate is below the first's
  assert.ok(fullResult.history[2].learningRate < fullResult.history[0].learningRate);

  // the checkpoint was kept up to date by the resumed run; asking it for no more epochs is an error
  const again = await runCli(['train', '--resume', checkpoint, '--device', 'cpu', '--out', 'x.safetensors'], dir);
  assert.equal(again.code, 1);
  assert.match(errorLine(again), /has already trained 3 of 3 epochs; ask for more epochs/);
});

test('--early-stop with --restore-best stops on a plateau and says so; bad flags are usage errors', async () => {
  const dir = scratchDir('earlystop');
  // a huge minDelta: no epoch after the first counts as better, so patience 2 ends the run at epoch 3
  const result = await runCli(['train', '--data', iris, '--epochs', '50', '--device', 'cpu', '--early-stop', 'val_loss:2:1000',
    '--restore-best', '--lr-schedule', 'step:10:0.5', '--out', 'iris.safetensors', '--json'], dir);
  assert.equal(result.code, 0, result.stderr);
  const parsed = JSON.parse(result.stdout);
  assert.equal(parsed.status, 'completed');
  assert.equal(parsed.stoppedEarly, true);
  assert.equal(parsed.history.length, 3);
  assert.equal(parsed.bestEpoch, 1);
  assert.match(parsed.message, /early stopping: the validation loss has not improved for 2 epochs .*kept the weights of epoch 1/);

  const badSchedule = await runCli(['train', '--data', iris, '--lr-schedule', 'linear', '--out', 'x.safetensors'], dir);
  assert.notEqual(badSchedule.code, 0);
  assert.match(badSchedule.stderr, /--lr-schedule "linear": expected constant, step/);
  const badMonitor = await runCli(['train', '--data', iris, '--early-stop', 'accuracy', '--out', 'x.safetensors'], dir);
  assert.notEqual(badMonitor.code, 0);
  assert.match(badMonitor.stderr, /--early-stop "accuracy": expected <monitor>/);
  const lonely = await runCli(['train', '--data', iris, '--restore-best', '--out', 'x.safetensors'], dir);
  assert.match(errorLine(lonely), /--restore-best needs --early-stop/);
});

test('--resume refuses a model file, a damaged checkpoint and flags it would ignore, naming the file', async () => {
  const dir = scratchDir('resumebad');
  const trained = await runCli(['train', '--data', iris, '--epochs', '3', '--device', 'cpu', '--checkpoint', 'iris.ckpt', '--out', 'iris.safetensors'], dir);
  assert.equal(trained.code, 0, trained.stderr);

  const notCheckpoint = await runCli(['train', '--resume', 'iris.safetensors', '--epochs', '5', '--out', 'x.safetensors'], dir);
  assert.match(errorLine(notCheckpoint), /iris\.safetensors: __metadata__ has no "nnstudio_checkpoint" entry/);

  const bytes = fs.readFileSync(path.join(dir, 'iris.ckpt'));
  fs.writeFileSync(path.join(dir, 'cut.ckpt'), bytes.subarray(0, bytes.length - 12));
  const truncated = await runCli(['train', '--resume', 'cut.ckpt', '--epochs', '5', '--out', 'x.safetensors'], dir);
  assert.match(errorLine(truncated), /cut\.ckpt: /);

  const ignored = await runCli(['train', '--resume', 'iris.ckpt', '--epochs', '5', '--batch-size', '8', '--out', 'x.safetensors'], dir);
  assert.match(errorLine(ignored), /leave out --batch-size/);

  const more = await runCli(['train', '--resume', 'iris.ckpt', '--epochs', '5', '--device', 'cpu', '--out', 'more.safetensors', '--json'], dir);
  assert.equal(more.code, 0, more.stderr);
  assert.equal(JSON.parse(more.stdout).history.length, 5);

  // a data-parallel run's GPUs are in its record: a resume asks for them again (here, on the CPU: refused)
  const written = decodeCheckpoint(fs.readFileSync(path.join(dir, 'iris.ckpt')), 'iris.ckpt');
  await saveCheckpoint(path.join(dir, 'two-gpus.ckpt'), { ...written, run: { ...written.run, device: 'cuda', gpus: [0, 1] } });
  assert.deepEqual(parseRunRecord(decodeCheckpoint(fs.readFileSync(path.join(dir, 'two-gpus.ckpt')), 'two-gpus.ckpt').run, 'two-gpus.ckpt').gpus, [0, 1]);
  const twoGpus = await runCli(['train', '--resume', 'two-gpus.ckpt', '--epochs', '7', '--device', 'cpu', '--out', 'x.safetensors'], dir);
  assert.match(errorLine(twoGpus), /several GPUs need the CUDA device/);
});

test('a checkpoint keeps the device its run trained on, and a resume without --device stays on the CPU', async () => {
  const dir = scratchDir('device');
  const checkpoint = path.join(dir, 'iris.checkpoint.safetensors');
  const trained = await runCli(['train', '--data', iris, '--epochs', '2', '--device', 'cpu', '--threads', '1', '--checkpoint', checkpoint,
    '--out', 'iris.safetensors', '--json'], dir);
  assert.equal(trained.code, 0, trained.stderr);
  const record = parseRunRecord(decodeCheckpoint(fs.readFileSync(checkpoint), checkpoint).run, checkpoint);
  assert.equal(record.device, 'cpu');
  // On a machine with a GPU, 'auto' would move a CPU run there and the continued run would lose its bits.
  assert.equal(resumeDevice(record), 'cpu');
  assert.equal(resumeDevice({ ...record, device: 'cuda' }), 'auto', 'a GPU run goes back to a GPU where there is one');
  assert.equal(resumeDevice({ ...record, device: undefined }), 'auto', 'an older checkpoint keeps the default');
});
