// close() while a run still writes its checkpoint in the session folder: the run is cancelled and its end
// waited for; the folder is removed only once the run has ended (after close() returned, when the run takes
// longer than closeTimeoutMs), the run ends 'cancelled' with no write error, and nothing rejects unhandled.
import { afterEach, describe, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import * as path from 'node:path';
import { createApi, type Api, type DatasetInfo, type TrainingDone } from '../../../app/api';
import { captureLog, resultOf, within } from './helpers';

const isCheckpointTemp = (file: string) => /[\\/]checkpoints[\\/]run-\d+\.checkpoint\.safetensors\.tmp-/.test(file);
const isCheckpoint = (file: string) => /[\\/]checkpoints[\\/]run-\d+\.checkpoint\.safetensors$/.test(file);

/**
 * Holds the first checkpoint write of the session between opening its temporary file and writing it, until
 * release(); records every rename onto a checkpoint that failed (a write error).
 */
function holdFirstCheckpointWrite() {
  let release = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  let started: (file: string) => void = () => {};
  const writeStarted = new Promise<string>((resolve) => (started = resolve));
  let held = false;
  const failedRenames: string[] = [];
  const realOpen = fs.promises.open.bind(fs.promises);
  const realRename = fs.promises.rename.bind(fs.promises);
  const open = mock.method(fs.promises, 'open', async (file: fs.PathLike, flags?: string | number, mode?: fs.Mode): Promise<FileHandle> => {
    const handle = await realOpen(file, flags, mode);
    if (!held && isCheckpointTemp(String(file))) {
      held = true;
      started(String(file));
      await released;
    }
    return handle;
  });
  const rename = mock.method(fs.promises, 'rename', async (from: fs.PathLike, to: fs.PathLike): Promise<void> => {
    try {
      await realRename(from, to);
    } catch (error) {
      if (isCheckpoint(String(to))) failedRenames.push(`${String(to)}: ${(error as Error).message}`);
      throw error;
    }
  });
  return { writeStarted, release, failedRenames, restore: () => (open.mock.restore(), rename.mock.restore()) };
}

function doneOf(api: Api, runId: string): Promise<TrainingDone> {
  return new Promise((resolve) => {
    api.subscribe((event) => {
      if (event.event === 'training:done' && event.payload.runId === runId) resolve(event.payload);
    });
  });
}

/** A run far longer than the test (the close cancels it), checkpointing after every epoch of ~60 steps. */
async function startLongRun(api: Api): Promise<string> {
  const mnist = resultOf(await api.dispatch('datasets:open', { source: { kind: 'mnist', split: 'train', limit: 1000 } })) as DatasetInfo;
  const { runId } = resultOf(await api.dispatch('training:start', {
    datasetId: mnist.id, epochs: 100_000, batchSize: 16, device: 'cpu', threads: 1, model: { layers: 'dense:32:relu,dense:10' },
  })) as { runId: string };
  return runId;
}

async function until(condition: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('close() and the runs still going', () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  afterEach(() => mock.restoreAll());

  test('a run writing its checkpoint when close() is called ends cancelled, and only then is the folder removed', async () => {
    const log = captureLog();
    const api = createApi({ runHistory: false, logger: log.logger, closeTimeoutMs: 300 });
    const hold = holdFirstCheckpointWrite();
    try {
      const runId = await startLongRun(api);
      const done = doneOf(api, runId);
      const checkpointTemp = await within(hold.writeStarted, 60_000, 'the first checkpoint write');
      const sessionFolder = path.dirname(path.dirname(checkpointTemp));

      await within(api.close(), 20_000, 'close()');
      assert.ok(fs.existsSync(sessionFolder), 'the session folder stays while its run still writes there');
      assert.match(log.text(), new RegExp(`warn: closing the session: ${runId} still stopping after 300 ms`));

      hold.release();
      const outcome = await within(done, 60_000, `training:done of ${runId}`);
      assert.equal(outcome.status, 'cancelled', outcome.message);
      assert.doesNotMatch(outcome.message, /cannot write|does not exist/);
      assert.deepEqual(hold.failedRenames.filter((failure) => failure.startsWith(sessionFolder)), [], 'no checkpoint write failed');
      await until(() => !fs.existsSync(sessionFolder), 10_000, `${sessionFolder} to be removed`);
      assert.deepEqual(unhandled, [], 'no unhandled rejection');
      assert.doesNotMatch(log.text(), /^error:/m);
    } finally {
      hold.release();
      hold.restore();
    }
  });

  test('a run that stops within the wait: close() returns after its training:done, with the folder gone', async () => {
    const log = captureLog();
    const api = createApi({ runHistory: false, logger: log.logger });
    const hold = holdFirstCheckpointWrite();
    try {
      const runId = await startLongRun(api);
      let ended: TrainingDone | undefined;
      void doneOf(api, runId).then((outcome) => (ended = outcome));
      const sessionFolder = path.dirname(path.dirname(await within(hold.writeStarted, 60_000, 'the first checkpoint write')));

      const closing = api.close();
      setTimeout(hold.release, 200);
      await within(closing, 20_000, 'close()');
      assert.equal(ended?.status, 'cancelled', 'training:done came before close() returned');
      assert.ok(!fs.existsSync(sessionFolder), 'the session folder is gone when close() returns');
      assert.deepEqual(hold.failedRenames.filter((failure) => failure.startsWith(sessionFolder)), []);
      assert.deepEqual(unhandled, []);
      assert.equal(log.text(), '', 'nothing to log');
    } finally {
      hold.release();
      hold.restore();
    }
  });
});
