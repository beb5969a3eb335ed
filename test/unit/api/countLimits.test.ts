// Counts beyond the engine's bounds (core/model/countLimits.ts) are refused at the gate with one message
// naming the bound: the UI API's schemas, a checkpoint's run record, and a dispatch answering with the field.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createApi } from '../../../app/api';
import { payloadSchemas, type Channel } from '../../../app/api/schemas';
import { parseRunRecord } from '../../../app/services/runRecord';

function issues(channel: Channel, payload: unknown): string[] {
  const parsed = payloadSchemas[channel].safeParse(payload);
  return parsed.success ? [] : parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
}

describe('counts at the gate', () => {
  test('training:start: epochs, batch size, threads and seed within the engine\'s bounds', () => {
    const start = (fields: Record<string, unknown>) => issues('training:start', { datasetId: 'dataset-1', ...fields });
    assert.deepEqual(start({ epochs: 1e20 }), ['epochs: must be an integer between 1 and 1000000']);
    assert.deepEqual(start({ epochs: 1_000_001 }), ['epochs: must be an integer between 1 and 1000000']);
    assert.deepEqual(start({ batchSize: 99999999999999999999 }), ['batchSize: must be an integer between 1 and 2147483647']);
    assert.deepEqual(start({ batchSize: 2 ** 31 }), ['batchSize: must be an integer between 1 and 2147483647']);
    assert.deepEqual(start({ threads: 4097 }), ['threads: must be an integer between 0 and 4096']);
    assert.deepEqual(start({ seed: 2 ** 53 }), ['seed: must be an integer between 0 and 9007199254740991']);
    assert.deepEqual(start({ lrSchedule: { kind: 'step', everyEpochs: 1e20 } }), ['lrSchedule.everyEpochs: must be an integer between 1 and 1000000']);
    assert.deepEqual(start({ earlyStopping: { monitor: 'trainLoss', patience: 1e20 } }), ['earlyStopping.patience: must be an integer between 1 and 1000000']);
    // the bounds themselves are accepted
    assert.deepEqual(start({ epochs: 1_000_000, batchSize: 2 ** 31 - 1, threads: 4096, seed: 2 ** 53 - 1 }), []);
  });

  test('training:continue: epochs within the engine\'s bounds', () => {
    assert.deepEqual(issues('training:continue', { runId: 'run-1', epochs: 1e20 }), ['epochs: must be an integer between 1 and 1000000']);
    assert.deepEqual(issues('training:continue', { runId: 'run-1', epochs: 2.5 }), ['epochs: must be an integer between 1 and 1000000']);
  });

  test('a checkpoint\'s run record with an absurd count names the file and the field', () => {
    const record = {
      data: { kind: 'mnist', split: 'train' }, normalize: 'none', valSplit: 0, testSplit: 0, seed: 0, epochs: 1e20, batchSize: 64,
      threads: 0, trainDigest: '0'.repeat(64), counts: { train: 10, validation: 0, test: 0 },
    };
    assert.throws(() => parseRunRecord(record, 'run.ckpt'), { message: 'run.ckpt: metadata nnstudio_checkpoint.run.epochs: must be an integer between 1 and 1000000' });
    assert.equal(parseRunRecord({ ...record, epochs: 3 }, 'run.ckpt').epochs, 3);
  });
});

describe('counts through dispatch', () => {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-api-counts-'));
  const api = createApi({ uploadDir: path.join(scratch, 'uploads') });
  after(async () => {
    await api.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  test('training:start with epochs 1e20 answers an error naming the field, before any dataset lookup', async () => {
    const response = await api.dispatch('training:start', { datasetId: 'dataset-404', epochs: 1e20 });
    assert.equal(response.error?.field, 'epochs');
    assert.equal(response.error?.message, 'training:start: epochs: must be an integer between 1 and 1000000');
  });
});
