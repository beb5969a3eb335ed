// The run history through the UI API: a finished training is recorded (training:done names it), then
// runs:list / runs:get / runs:open / runs:delete; bad ids and unreadable files are error values, never throws.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import {
  createApi,
  type Api,
  type DatasetInfo,
  type EvaluationResult,
  type ModelInfo,
  type SavedRun,
  type SavedRunList,
  type TrainingDone,
} from '../../../app/api';
import { RunStore } from '../../../app/services/runs';
import { irisCsv, resultOf, within } from './helpers';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-api-runs-'));
const runsDir = path.join(scratch, 'runs');
const api = createApi({ uploadDir: path.join(scratch, 'uploads'), runHistory: new RunStore(runsDir) });
const apis: Api[] = [api];
after(async () => {
  await Promise.all(apis.map((each) => each.close()));
  fs.rmSync(scratch, { recursive: true, force: true });
});

/** Trains iris for `epochs` on the CPU and resolves to training:done. */
async function trainIris(on: Api, epochs: number, lr = 0.01): Promise<TrainingDone> {
  const iris = resultOf(await on.dispatch('datasets:open', { source: { kind: 'path', path: irisCsv } })) as DatasetInfo;
  let runId: string | undefined;
  let unsubscribe = () => {};
  const done = new Promise<TrainingDone>((resolve) => {
    unsubscribe = on.subscribe((event) => {
      if (event.event === 'training:done' && event.payload.runId === runId) resolve(event.payload);
    });
  });
  const started = resultOf(
    await on.dispatch('training:start', { datasetId: iris.id, model: { layers: 'dense:8:relu,dense:3', lr }, epochs, batchSize: 16, device: 'cpu', threads: 1 }),
  ) as { runId: string };
  runId = started.runId;
  return within(done, 60_000, 'training:done').finally(() => unsubscribe());
}

describe('run history through the API', () => {
  let first: TrainingDone;
  let second: TrainingDone;

  test('every finished training is recorded; training:done names the saved run', async () => {
    first = await trainIris(api, 3, 0.01);
    second = await trainIris(api, 2, 0.05);
    assert.equal(first.status, 'completed', first.message);
    assert.match(first.savedRunId ?? '', /^\d{8}-\d{6}-[0-9a-f]{8}$/);
    assert.equal(first.savedRunError, undefined);
    assert.ok(fs.existsSync(path.join(runsDir, `${first.savedRunId}.json`)));
    assert.ok(fs.existsSync(path.join(runsDir, `${first.savedRunId}.safetensors`)));
  });

  test('runs:list gives the key metrics, newest first', async () => {
    const listing = resultOf(await api.dispatch('runs:list', {})) as SavedRunList;
    assert.equal(listing.directory, runsDir);
    assert.deepEqual(listing.runs.map((run) => run.id), [second.savedRunId, first.savedRunId]);
    const run = listing.runs[1];
    assert.equal(run.data, 'iris.csv');
    assert.equal(run.model, 'dense:8:relu,dense:3');
    assert.equal(run.epochs, 3);
    assert.equal(run.status, 'completed');
    assert.equal(run.testAccuracy, first.test?.report.accuracy);
    assert.equal(run.testMacroF1, first.test?.report.macro.f1);
    assert.equal(run.hasModel, true);
  });

  test('runs:get gives the whole record and the model path', async () => {
    const record = resultOf(await api.dispatch('runs:get', { runId: first.savedRunId! })) as SavedRun;
    assert.equal(record.id, first.savedRunId);
    assert.deepEqual(record.history.map((epoch) => epoch.trainLoss), first.history.map((epoch) => epoch.trainLoss));
    assert.deepEqual(record.test?.report.confusion, first.test?.report.confusion);
    assert.equal(record.options.lr, 0.01);
    assert.equal(record.data.description, irisCsv);
    assert.equal(record.modelPath, path.join(runsDir, `${first.savedRunId}.safetensors`));
  });

  test('runs:open adds the run\'s model to the session: it evaluates as the trained one did, and opens once', async () => {
    const opened = resultOf(await api.dispatch('runs:open', { runId: first.savedRunId! })) as ModelInfo;
    assert.notEqual(opened.id, first.modelId);
    assert.equal(opened.savedRunId, first.savedRunId);
    assert.match(opened.name, /^iris\.csv, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    assert.equal(opened.training?.history.length, 3, 'the history travels with the model, so the comparison shows it');
    assert.ok((opened.metrics as { test?: unknown }).test, 'and the test metrics');
    const models = resultOf(await api.dispatch('models:list', {})) as ModelInfo[];
    assert.ok(models.some((model) => model.id === opened.id));

    const iris = resultOf(await api.dispatch('datasets:open', { source: { kind: 'path', path: irisCsv } })) as DatasetInfo;
    const fromRun = resultOf(await api.dispatch('evaluation:evaluate', { modelId: opened.id, datasetId: iris.id, device: 'cpu' })) as EvaluationResult;
    const fromSession = resultOf(await api.dispatch('evaluation:evaluate', { modelId: first.modelId!, datasetId: iris.id, device: 'cpu' })) as EvaluationResult;
    assert.deepEqual(fromRun.predictions, fromSession.predictions);

    const again = resultOf(await api.dispatch('runs:open', { runId: first.savedRunId! })) as ModelInfo;
    assert.equal(again.id, opened.id);
    // Another run of the same file from the same second gets its id in the name, so pickers tell them apart.
    const other = resultOf(await api.dispatch('runs:open', { runId: second.savedRunId! })) as ModelInfo;
    assert.notEqual(other.name, opened.name);
    const names = (resultOf(await api.dispatch('models:list', {})) as ModelInfo[]).map((model) => model.name);
    assert.equal(new Set(names).size, names.length, `model names are distinct: ${names.join(' | ')}`);
  });

  test('runs:delete removes the files; the run is then an error value, the opened model stays', async () => {
    const deleted = resultOf(await api.dispatch('runs:delete', { runId: second.savedRunId! })) as { deleted: string };
    assert.equal(deleted.deleted, second.savedRunId);
    assert.equal(fs.existsSync(path.join(runsDir, `${second.savedRunId}.json`)), false);
    assert.equal(fs.existsSync(path.join(runsDir, `${second.savedRunId}.safetensors`)), false);
    const gone = await api.dispatch('runs:get', { runId: second.savedRunId! });
    assert.match(gone.error?.message ?? '', /no saved run/);
    assert.equal(gone.error?.code, 'ERR_NNSTUDIO_RUN_NOT_FOUND');
    const listing = resultOf(await api.dispatch('runs:list', {})) as SavedRunList;
    assert.deepEqual(listing.runs.map((run) => run.id), [first.savedRunId]);
  });

  test('bad ids are refused at the gate, naming the field', async () => {
    for (const runId of ['../escape', '', 'a/b', 'x'.repeat(101)]) {
      const response = await api.dispatch('runs:open', { runId });
      assert.equal(response.error?.field, 'runId', runId);
    }
    const extra = await api.dispatch('runs:list', { all: true });
    assert.equal(extra.error?.field, 'all');
  });

  test('unreadable run files are listed as problems; opening one is an error value', async () => {
    fs.writeFileSync(path.join(runsDir, 'broken.json'), '{');
    const record = JSON.parse(fs.readFileSync(path.join(runsDir, `${first.savedRunId}.json`), 'utf8'));
    fs.writeFileSync(path.join(runsDir, 'future.json'), JSON.stringify({ ...record, id: 'future', formatVersion: 5 }));
    const listing = resultOf(await api.dispatch('runs:list', {})) as SavedRunList;
    assert.equal(listing.runs.length, 1);
    assert.deepEqual(listing.problems.map((problem) => problem.file), ['broken.json', 'future.json']);
    assert.match(listing.problems[1].message, /format version 5 is not supported/);
    const opened = await api.dispatch('runs:open', { runId: 'future' });
    assert.match(opened.error?.message ?? '', /^future\.json: format version 5/);
    const broken = await api.dispatch('runs:get', { runId: 'broken' });
    assert.match(broken.error?.message ?? '', /^broken\.json: not valid JSON/);
  });

  test('a run whose model file is gone opens as an error value naming the file', async () => {
    const model = path.join(runsDir, `${first.savedRunId}.safetensors`);
    fs.renameSync(model, `${model}.moved`);
    try {
      const fresh = createApi({ runHistory: new RunStore(runsDir) });
      apis.push(fresh);
      const opened = await fresh.dispatch('runs:open', { runId: first.savedRunId! });
      assert.match(opened.error?.message ?? '', new RegExp(`its model file .*${first.savedRunId}\\.safetensors is missing`));
    } finally {
      fs.renameSync(`${model}.moved`, model);
    }
  });

  test('runHistory: false records nothing', async () => {
    const quiet = createApi({ runHistory: false });
    apis.push(quiet);
    const before = fs.readdirSync(runsDir).length;
    const done = await trainIris(quiet, 1);
    assert.equal(done.status, 'completed');
    assert.equal(done.savedRunId, undefined);
    assert.equal(fs.readdirSync(runsDir).length, before);
  });

  test('a failing history does not fail the run: training:done says why it was not recorded', async () => {
    const blocked = path.join(scratch, 'blocked');
    fs.writeFileSync(blocked, 'a file where the folder should be');
    const unlucky = createApi({ runHistory: new RunStore(blocked) });
    apis.push(unlucky);
    const done = await trainIris(unlucky, 1);
    assert.equal(done.status, 'completed');
    assert.ok(done.modelId);
    assert.equal(done.savedRunId, undefined);
    assert.match(done.savedRunError ?? '', /^the run was not recorded in the run history: /);
  });
});
