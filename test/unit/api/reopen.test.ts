// datasets:reopen: a CSV table read again from its file with another task or dates choice, replacing the open
// one under a new id, its uploaded file kept for the new one (a reload has no File object to send again).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createApi, type DatasetInfo } from '../../../app/api';
import { resultOf } from './helpers';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-reopen-'));
const api = createApi({ uploadDir: path.join(scratch, 'uploads'), runHistory: false });
after(async () => {
  await api.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

const rows = Array.from({ length: 60 }, (_, i) => `2024-0${1 + (i % 9)}-1${i % 9},${i % 7},${(i * 13) % 40}`);
const csv = `day,x,y\n${rows.join('\n')}\n`;

test('an uploaded CSV read again with date parts, then as classification: new ids, the old closed, the file kept', async () => {
  const opened = resultOf(await api.dispatch('datasets:open', { source: { kind: 'upload', fileName: 'days.csv', base64: Buffer.from(csv).toString('base64') } })) as DatasetInfo;
  assert.deepEqual(opened.csv, { dates: 'ignore' });
  assert.equal(opened.task, 'regression');
  assert.deepEqual(opened.featureShape, [1], 'the date left out');
  const parts = resultOf(await api.dispatch('datasets:reopen', { datasetId: opened.id, csv: { dates: 'parts' } })) as DatasetInfo;
  assert.notEqual(parts.id, opened.id);
  assert.deepEqual(parts.csv, { dates: 'parts' });
  assert.deepEqual(parts.featureShape, [5], 'x and the four date parts');
  assert.equal(parts.name, 'days.csv');
  const listed = resultOf(await api.dispatch('datasets:list', {})) as DatasetInfo[];
  assert.deepEqual(listed.map((entry) => entry.id), [parts.id], 'the old one is closed');
  const classes = resultOf(await api.dispatch('datasets:reopen', { datasetId: parts.id, csv: { task: 'classification' } })) as DatasetInfo;
  assert.equal(classes.task ?? 'classification', 'classification');
  assert.deepEqual(classes.featureShape, [5], 'the dates choice kept');
});

test('only a CSV table can be read again; an unknown id is named', async () => {
  const mnist = resultOf(await api.dispatch('datasets:open', { source: { kind: 'mnist', limit: 10 } })) as DatasetInfo;
  const refused = await api.dispatch('datasets:reopen', { datasetId: mnist.id, csv: { task: 'regression' } });
  assert.match(refused.error?.message ?? '', /is not a CSV table/);
  const unknown = await api.dispatch('datasets:reopen', { datasetId: 'dataset-99', csv: { dates: 'parts' } });
  assert.match(unknown.error?.message ?? '', /no dataset with id "dataset-99"/);
});
