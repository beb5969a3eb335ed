// Training control through the UI API: a learning rate set while paused (and refused once the run has
// finished), schedules and early stopping on training:start, and training:continue of a cancelled run
// from the session's checkpoint, ending in the uninterrupted run's weights bit for bit.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createApi, type ApiEvent, type DatasetInfo, type RunInfo, type TrainingDone } from '../../../app/api';
import { decodeModel } from '../../../app/core/model/modelFile';
import { irisCsv, resultOf, within } from './helpers';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-api-control-'));
const api = createApi({ uploadDir: path.join(scratch, 'uploads') });
after(async () => {
  await api.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

async function open(source: object): Promise<DatasetInfo> {
  return resultOf(await api.dispatch('datasets:open', { source } as never)) as DatasetInfo;
}

/** Calls `onEvent` for every event of the run and resolves with its training:done. */
function watch(runId: string, onEvent: (event: ApiEvent) => void = () => {}): Promise<TrainingDone> {
  let unsubscribe = () => {};
  const done = new Promise<TrainingDone>((resolve) => {
    unsubscribe = api.subscribe((event) => {
      if (!('runId' in event.payload) || event.payload.runId !== runId) return;
      onEvent(event);
      if (event.event === 'training:done') resolve(event.payload);
    });
  });
  return within(done, 120_000, `training:done of ${runId}`).finally(() => unsubscribe());
}

async function weightsOf(modelId: string): Promise<Float32Array> {
  const file = resultOf(await api.dispatch('models:download', { modelId })) as { base64: string };
  return decodeModel(Buffer.from(file.base64, 'base64'), 'download').parameters;
}

describe('training control', () => {
  test('a learning rate set while paused applies from the next step; refused after the run', async () => {
    // long enough that the pause lands before the end even on a busy machine
    const mnist = await open({ kind: 'mnist', split: 'train', limit: 2000 });
    const { runId } = resultOf(await api.dispatch('training:start', {
      datasetId: mnist.id, epochs: 20, device: 'cpu', threads: 1, model: { layers: 'dense:32:relu,dense:10', optimizer: 'sgd', lr: 0.1 },
    })) as { runId: string };
    const done = watch(runId);
    resultOf(await api.dispatch('training:pause', { runId }));
    const info = resultOf(await api.dispatch('training:setLearningRate', { runId, lr: 0.025 })) as RunInfo;
    assert.ok(['paused', 'starting'].includes(info.state), `state ${info.state}`);
    resultOf(await api.dispatch('training:resume', { runId }));
    const outcome = await done;
    assert.equal(outcome.status, 'completed', outcome.message);
    const rates = outcome.history.map((epoch) => epoch.learningRate);
    // the epoch the pause fell in may have begun at 0.1; every later one ran at the new rate
    const switched = rates.findIndex((rate) => rate === Math.fround(0.025));
    assert.ok(switched >= 0 && switched <= 1, `rates ${rates.join(', ')}`);
    assert.ok(rates.slice(switched).every((rate) => rate === Math.fround(0.025)), `rates ${rates.join(', ')}`);

    const late = await api.dispatch('training:setLearningRate', { runId, lr: 0.5 });
    assert.match(late.error?.message ?? '', /is finished: the learning rate can change only while it runs or is paused/);
    const zero = await api.dispatch('training:setLearningRate', { runId, lr: 0 });
    assert.equal(zero.error?.field, 'lr');
  });

  test('training:start takes a schedule and early stopping, and reports the stop', async () => {
    const iris = await open({ kind: 'path', path: irisCsv });
    const { runId } = resultOf(await api.dispatch('training:start', {
      datasetId: iris.id, epochs: 40, device: 'cpu',
      lrSchedule: { kind: 'onecycle', maxLr: 0.01 },
      earlyStopping: { monitor: 'validationLoss', patience: 2, minDelta: 1000, restoreBest: true },
    })) as { runId: string };
    const outcome = await watch(runId);
    assert.equal(outcome.status, 'completed', outcome.message);
    assert.equal(outcome.stoppedEarly, true);
    assert.equal(outcome.bestEpoch, 1);
    assert.equal(outcome.history.length, 3);
    assert.deepEqual(outcome.plan?.lrSchedule, { kind: 'onecycle', maxLr: 0.01 });
    const bad = await api.dispatch('training:start', { datasetId: iris.id, lrSchedule: { kind: 'cosine', minLr: -1 } });
    assert.equal(bad.error?.field, 'lrSchedule.minLr');
    const noValidation = await api.dispatch('training:start', { datasetId: iris.id, valSplit: 0, earlyStopping: { monitor: 'validationAccuracy' } });
    assert.match(noValidation.error?.message ?? '', /needs a validation split above 0/);
  });

  test('training:continue resumes a cancelled run from its checkpoint, as if never stopped', async () => {
    const mnist = await open({ kind: 'mnist', split: 'train', limit: 3000 });
    const settings = {
      datasetId: mnist.id, epochs: 4, batchSize: 32, device: 'cpu' as const, threads: 1, seed: 3,
      model: { layers: 'dense:64:relu,dropout:0.1,dense:10', optimizer: 'adam' as const, lr: 0.002 },
      lrSchedule: { kind: 'cosine' as const },
    };
    const { runId } = resultOf(await api.dispatch('training:start', settings)) as { runId: string };
    let cancelled = false;
    const first = await watch(runId, (event) => {
      if (!cancelled && event.event === 'training:progress' && event.payload.type === 'checkpoint') {
        cancelled = true;
        void api.dispatch('training:cancel', { runId });
      }
    });
    assert.equal(first.status, 'cancelled', first.message);
    const stopped = resultOf(await api.dispatch('training:status', { runId })) as RunInfo;
    assert.ok(stopped.checkpointEpoch !== undefined && stopped.checkpointEpoch >= 1 && stopped.checkpointEpoch < 4,
      `the session kept a checkpoint (epoch ${stopped.checkpointEpoch})`);

    const running = await api.dispatch('training:continue', { runId: 'run-999' });
    assert.match(running.error?.message ?? '', /no training run with id "run-999"/);
    const { runId: next } = resultOf(await api.dispatch('training:continue', { runId })) as { runId: string };
    const continued = await watch(next);
    assert.equal(continued.status, 'completed', continued.message);
    assert.equal(continued.history.length, 4);
    assert.equal(continued.plan?.resumedFrom?.epoch, stopped.checkpointEpoch);
    const info = resultOf(await api.dispatch('training:status', { runId: next })) as RunInfo;
    assert.equal(info.continuedFrom, runId);
    // The continued run is in the run history too, with all its epochs.
    assert.ok(continued.savedRunId, continued.savedRunError);
    const saved = resultOf(await api.dispatch('runs:get', { runId: continued.savedRunId })) as { status: string; history: unknown[] };
    assert.equal(saved.status, 'completed');
    assert.equal(saved.history.length, 4);

    const { runId: whole } = resultOf(await api.dispatch('training:start', settings)) as { runId: string };
    const uninterrupted = await watch(whole);
    const a = await weightsOf(continued.modelId!);
    const b = await weightsOf(uninterrupted.modelId!);
    assert.ok(Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength)),
      'continued weights equal the uninterrupted run bit for bit');
    assert.deepEqual(continued.history.map((e) => e.trainLoss), uninterrupted.history.map((e) => e.trainLoss));

    const tooFew = await api.dispatch('training:continue', { runId: next, epochs: 4 });
    assert.ok(!tooFew.error, 'continue starts (the service then fails the run with a reason)');
    const refused = await watch((tooFew.result as { runId: string }).runId);
    assert.equal(refused.status, 'failed');
    assert.match(refused.message, /has already trained 4 of 4 epochs; ask for more epochs/);
  });
});
