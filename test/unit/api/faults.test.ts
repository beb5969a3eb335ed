// Faults as the UI sees them (docs/RELIABILITY.md, "Faults"): a NaN loss, a cancel at either edge of a
// run, a second training while one runs (refused), a full disk under models:save / the checkpoints / the run
// history, and a GPU that cannot take the model. Each ends in a defined outcome: a clear message, nothing
// lost that was trained, and a session that goes on working.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createApi, type Api, type ApiEvent, type DatasetInfo, type EvaluationResult, type ModelInfo, type RunInfo, type TrainingDone } from '../../../app/api';
import { decodeModel } from '../../../app/core/model/modelFile';
import * as engine from '../../../app/engine';
import { RunStore } from '../../../app/services/runs';
import { fillDisk } from './diskFull';
import { irisCsv, resultOf, within } from './helpers';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-api-faults-'));
const apis: Api[] = [];
function session(runsDir?: string): Api {
  const api = createApi({
    uploadDir: path.join(scratch, `uploads-${apis.length}`),
    runHistory: runsDir ? new RunStore(runsDir) : false,
  });
  apis.push(api);
  return api;
}
const api = session();
after(async () => {
  await Promise.all(apis.map((each) => each.close()));
  fs.rmSync(scratch, { recursive: true, force: true });
});

async function open(on: Api, source: object): Promise<DatasetInfo> {
  return resultOf(await on.dispatch('datasets:open', { source } as never)) as DatasetInfo;
}

/** Calls `onEvent` for every event of the run and resolves with its training:done. */
function watch(on: Api, runId: string, onEvent: (event: ApiEvent) => void = () => {}, ms = 120_000): Promise<TrainingDone> {
  let unsubscribe = () => {};
  const done = new Promise<TrainingDone>((resolve) => {
    unsubscribe = on.subscribe((event) => {
      if (!('runId' in event.payload) || event.payload.runId !== runId) return;
      onEvent(event);
      if (event.event === 'training:done') resolve(event.payload);
    });
  });
  return within(done, ms, `training:done of ${runId}`).finally(() => unsubscribe());
}

async function start(on: Api, payload: object): Promise<string> {
  return (resultOf(await on.dispatch('training:start', payload as never)) as { runId: string }).runId;
}

async function weightsOf(on: Api, modelId: string): Promise<Float32Array> {
  const file = resultOf(await on.dispatch('models:download', { modelId })) as { base64: string };
  return decodeModel(Buffer.from(file.base64, 'base64'), 'download').parameters;
}

/** The model evaluates, saves and imports back with the same predictions: the session can go on with it. */
async function assertUsable(on: Api, modelId: string, datasetId: string, what: string): Promise<void> {
  const evaluation = resultOf(await on.dispatch('evaluation:evaluate', { modelId, datasetId, device: 'cpu' })) as EvaluationResult;
  assert.ok(Number.isFinite(evaluation.loss), `${what}: a finite loss`);
  const file = path.join(scratch, `${what.replace(/\W+/g, '-')}.safetensors`);
  resultOf(await on.dispatch('models:save', { modelId, path: file }));
  const imported = resultOf(await on.dispatch('models:import', { source: { kind: 'path', path: file } })) as ModelInfo;
  const again = resultOf(await on.dispatch('evaluation:evaluate', { modelId: imported.id, datasetId, device: 'cpu' })) as EvaluationResult;
  assert.deepEqual(again.predictions, evaluation.predictions, `${what}: the saved model predicts the same`);
}

const slowMlp = { layers: 'dense:512:relu,dense:10' };

describe('faults through the UI API', () => {
  test('NaN loss: training:done says diverged and why, and keeps the last finite weights as a usable model', async () => {
    const iris = await open(api, { kind: 'path', path: irisCsv });
    const runId = await start(api, { datasetId: iris.id, model: { layers: 'dense:8:relu,dense:3', optimizer: 'sgd', lr: 1e30 }, epochs: 50, device: 'cpu', threads: 1 });
    const done = await watch(api, runId);
    assert.equal(done.status, 'diverged');
    assert.match(done.message, /^training diverged at epoch \d+, step \d+: the loss became (NaN|infinite); kept the weights of the last step with a finite loss/);
    assert.ok(done.modelId, 'the model is kept');
    assert.ok((await weightsOf(api, done.modelId)).every(Number.isFinite), 'the kept weights are finite');
    await assertUsable(api, done.modelId, iris.id, 'diverged');
    const status = resultOf(await api.dispatch('training:status', { runId })) as RunInfo;
    assert.equal(status.state, 'finished');
    assert.equal(status.outcome?.status, 'diverged');
  });

  test('cancel before the first step, during the first step and during the last step', async () => {
    const mnist = await open(api, { kind: 'mnist', limit: 2000 });
    const settings = { datasetId: mnist.id, model: slowMlp, batchSize: 256, device: 'cpu', threads: 1, seed: 2, testSplit: 0.1 };

    // before the first step (while the data loads): cancelled with no epoch, the initial weights as a model
    const early = await start(api, { ...settings, epochs: 3 });
    resultOf(await api.dispatch('training:cancel', { runId: early }));
    const none = await watch(api, early);
    assert.equal(none.status, 'cancelled');
    assert.deepEqual(none.history, []);
    assert.ok(none.modelId);
    await assertUsable(api, none.modelId, mnist.id, 'cancelled before the first step');

    // during the first step: the cancel from its step event stops the run within the epoch (an epoch of ~26
    // steps, so that the event's round trip through the event loop lands inside it on a loaded machine too)
    const longer = await open(api, { kind: 'mnist', limit: 8000 });
    const first = await start(api, { ...settings, datasetId: longer.id, epochs: 3 });
    let cancelledAt = -1;
    const stopped = await watch(api, first, (event) => {
      if (cancelledAt < 0 && event.event === 'training:progress' && event.payload.type === 'step') {
        cancelledAt = event.payload.globalStep;
        void api.dispatch('training:cancel', { runId: first });
      }
    });
    assert.equal(stopped.status, 'cancelled');
    assert.match(stopped.message, /^training cancelled at epoch 1, step \d+ of \d+; kept the weights of the last completed step$/);
    assert.deepEqual(stopped.history, []);
    assert.ok(stopped.modelId);
    await assertUsable(api, stopped.modelId, longer.id, 'cancelled in the first step');

    // during the last step: too late to skip anything; the run completes with every epoch
    const last = await start(api, { ...settings, epochs: 2 });
    let answer: Promise<unknown> | undefined;
    const completed = await watch(api, last, (event) => {
      if (!answer && event.event === 'training:progress' && event.payload.type === 'step' && event.payload.globalStep === event.payload.totalSteps) {
        answer = api.dispatch('training:cancel', { runId: last });
      }
    });
    assert.ok(answer, 'the last step was reported');
    assert.equal(completed.status, 'completed', completed.message);
    assert.equal(completed.history.length, 2);
    assert.ok(completed.test, 'the test split was evaluated');
    assert.ok(completed.modelId);
    await assertUsable(api, completed.modelId, mnist.id, 'cancelled in the last step');
  });

  test('a second training while one runs: refused with the run and the way out; the first goes on; then it starts', async () => {
    const mnist = await open(api, { kind: 'mnist', limit: 2000 });
    const iris = await open(api, { kind: 'path', path: irisCsv });
    const long = await start(api, { datasetId: mnist.id, model: slowMlp, epochs: 1000, batchSize: 64, device: 'cpu', threads: 1 });
    const longDone = watch(api, long);
    // wait until the first run is really training
    for (let i = 0; i < 300; i++) {
      const info = resultOf(await api.dispatch('training:status', { runId: long })) as RunInfo;
      if (info.lastStep) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const irisRun = { datasetId: iris.id, model: { layers: 'dense:16:relu,dense:3' }, epochs: 15, batchSize: 16, device: 'cpu', threads: 1, seed: 9 };
    const refused = await api.dispatch('training:start', irisRun);
    assert.ok(refused.error, 'a second run is refused');
    assert.match(refused.error.message, new RegExp(`^${long} is still training \\(epoch \\d+ of 1000\\): wait for it to finish, or cancel it`));
    const during = resultOf(await api.dispatch('training:status', { runId: long })) as RunInfo;
    assert.equal(during.state, 'running', 'the first run goes on');
    const listed = resultOf(await api.dispatch('training:list', {})) as RunInfo[];
    assert.deepEqual(listed.filter((run) => run.state !== 'finished').map((run) => run.runId), [long], 'the session lists one run going on');
    assert.ok((listed.find((run) => run.runId === long)?.stepLoss?.length ?? 0) > 0, 'with its per-step loss so far');
    resultOf(await api.dispatch('training:cancel', { runId: long }));
    const first = await longDone;
    assert.equal(first.status, 'cancelled');
    assert.ok(first.modelId, 'the cancelled first run keeps its model');
    const alone = await watch(api, await start(api, irisRun));
    assert.equal(alone.status, 'completed', 'once the first ended, the second starts');
  });

  test('disk full on models:save: an error value naming the file, the previous file intact, no temporary left', async () => {
    const iris = await open(api, { kind: 'path', path: irisCsv });
    const done = await watch(api, await start(api, { datasetId: iris.id, model: { layers: 'dense:8:relu,dense:3' }, epochs: 3, device: 'cpu', threads: 1 }));
    const folder = fs.mkdtempSync(path.join(scratch, 'full-'));
    const target = path.join(folder, 'model.safetensors');
    resultOf(await api.dispatch('models:save', { modelId: done.modelId, path: target }));
    const previous = fs.readFileSync(target);
    for (const format of ['safetensors', 'onnx'] as const) {
      const disk = fillDisk((file) => file.startsWith(folder));
      let response;
      try {
        response = await api.dispatch('models:save', { modelId: done.modelId, path: target, format });
      } finally {
        disk.restore();
      }
      assert.equal(disk.failures.length, 1, 'the write was attempted and failed');
      assert.equal(response.result, undefined);
      assert.equal(response.error?.message, `cannot save ${format === 'onnx' ? '' : 'model to '}${target}: no space left on the device`);
      assert.ok(fs.readFileSync(target).equals(previous), `${format}: the previous file is byte-identical`);
      assert.deepEqual(fs.readdirSync(folder), ['model.safetensors'], 'no temporary file is left');
    }
    resultOf(await api.dispatch('models:save', { modelId: done.modelId, path: target }));
  });

  test('disk full under the checkpoints: the run stops as failed, says why, and keeps its model', async () => {
    const mnist = await open(api, { kind: 'mnist', limit: 1000 });
    const disk = fillDisk((file) => file.includes('.checkpoint.safetensors'));
    let done: TrainingDone;
    try {
      done = await watch(api, await start(api, { datasetId: mnist.id, model: { layers: 'dense:32:relu,dense:10' }, epochs: 50, batchSize: 32, device: 'cpu', threads: 1 }));
    } finally {
      disk.restore();
    }
    assert.equal(done.status, 'failed');
    assert.match(done.message, /^cannot save checkpoint to .*run-\d+\.checkpoint\.safetensors: no space left on the device; training stopped after \d+ epochs? \(step \d+\), and the model keeps the weights of the last completed step$/);
    assert.ok(done.history.length >= 1 && done.history.length < 50, `${done.history.length} epochs`);
    assert.ok(done.modelId, 'the weights trained so far are kept');
    await assertUsable(api, done.modelId, mnist.id, 'checkpoint disk full');
  });

  test('disk full under the run history: the run stands, training:done says it was not recorded', async () => {
    const runsDir = path.join(scratch, 'runs');
    const recording = session(runsDir);
    const iris = await open(recording, { kind: 'path', path: irisCsv });
    const disk = fillDisk((file) => file.startsWith(runsDir));
    let done: TrainingDone;
    try {
      done = await watch(recording, await start(recording, { datasetId: iris.id, model: { layers: 'dense:8:relu,dense:3' }, epochs: 3, device: 'cpu', threads: 1 }));
    } finally {
      disk.restore();
    }
    assert.equal(done.status, 'completed');
    assert.equal(done.savedRunId, undefined);
    assert.match(done.savedRunError ?? '', /^the run was not recorded in the run history: .*no space left on the device/);
    assert.ok(done.modelId);
    await assertUsable(recording, done.modelId, iris.id, 'run history disk full');
    const left = fs.existsSync(runsDir) ? fs.readdirSync(runsDir).filter((name) => name.includes('.tmp-')) : [];
    assert.deepEqual(left, [], 'no temporary run file is left');
    const listing = resultOf(await recording.dispatch('runs:list', {})) as { runs: unknown[]; problems: unknown[] };
    assert.deepEqual(listing.problems, [], 'the history has no half-written run');
  });

  test('a GPU that cannot take the model: training:done failed with the reason, then a small model trains', async () => {
    const mnist = await open(api, { kind: 'mnist', limit: 256 });
    const small = { datasetId: mnist.id, model: { layers: 'dense:32:relu,dense:10' }, epochs: 1, batchSize: 64, threads: 1 };
    if (!engine.cudaAvailable()) {
      // the same path without a GPU: the device is refused when the run starts, as a failed run
      const done = await watch(api, await start(api, { ...small, device: 'cuda' }));
      assert.equal(done.status, 'failed');
      assert.equal(done.message, 'no CUDA device is available; use --device cpu');
      const after = await watch(api, await start(api, { ...small, device: 'cpu' }));
      assert.equal(after.status, 'completed');
      return;
    }
    // nine dense layers of 32768 (one layer may hold at most 2^31 - 1 parameters): 8.6 billion parameters,
    // 160 GiB with Adam's moments (more than any GPU of today)
    const layers = [...Array.from({ length: 9 }, () => 'dense:32768'), 'dense:10'].join(',');
    const huge = await watch(api, await start(api, { ...small, model: { layers, optimizer: 'adam' }, device: 'cuda' }));
    assert.equal(huge.status, 'failed');
    assert.match(huge.message, /^too little free memory on .*: the run needs at least \d+\.\d+ GiB .* and the GPU has \d+\.\d+ GiB free of \d+\.\d+ GiB: lower the batch size/);
    const after = await watch(api, await start(api, { ...small, device: 'cuda' }));
    assert.equal(after.status, 'completed', after.message);
  });
});
