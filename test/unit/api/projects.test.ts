// Projects through the UI API: a session saved as a .nnstudio file (its datasets, workspace and runs) opens
// in a new session with the same data, drafts and models; an upload is copied beside the project; a missing
// data file is named in the notes while the rest opens; a damaged project file is refused, naming the file;
// the last session is kept in the data folder and opened again.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createApi, type Api, type DatasetInfo, type ProjectOpened, type ProjectsInfo, type TrainingDone, type Workspace } from '../../../app/api';
import { RunStore, runsDirectory } from '../../../app/services/runs';
import { irisCsv, resultOf, within } from './helpers';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-projects-'));
const apis: Api[] = [];
function session(keepLastSession = false): Api {
  const api = createApi({ uploadDir: path.join(scratch, `uploads-${apis.length}`), runHistory: new RunStore(runsDirectory()), keepLastSession });
  apis.push(api);
  return api;
}
after(async () => {
  await Promise.all(apis.map((api) => api.close()));
  fs.rmSync(scratch, { recursive: true, force: true });
});

function trained(api: Api, runId: string): Promise<TrainingDone> {
  let unsubscribe = () => {};
  const done = new Promise<TrainingDone>((resolve) => {
    unsubscribe = api.subscribe((event) => {
      if (event.event === 'training:done' && event.payload.runId === runId) resolve(event.payload);
    });
  });
  return within(done, 60_000, 'training:done').finally(() => unsubscribe());
}

const copyOfIris = path.join(scratch, 'iris copy.csv');
fs.copyFileSync(irisCsv, copyOfIris);

describe('projects', () => {
  const projectFile = path.join(scratch, 'saved', 'iris study.nnstudio');
  let first: Api;
  let byPath: DatasetInfo;
  let uploaded: DatasetInfo;
  let done: TrainingDone;

  test('a session with a dataset by path, an upload, a finished run and drafts is saved as a project', async () => {
    first = session();
    byPath = resultOf(await first.dispatch('datasets:open', { source: { kind: 'path', path: copyOfIris } })) as DatasetInfo;
    const base64 = fs.readFileSync(irisCsv).toString('base64');
    uploaded = resultOf(await first.dispatch('datasets:open', { source: { kind: 'upload', fileName: 'uploaded iris.csv', base64 } })) as DatasetInfo;
    const { runId } = resultOf(await first.dispatch('training:start', { datasetId: byPath.id, model: { layers: 'dense:8:relu,dense:3' }, epochs: 2, device: 'cpu', threads: 1 })) as { runId: string };
    done = await trained(first, runId);
    assert.ok(done.savedRunId, 'the run is in the run history');
    const drafts: Workspace = { datasetId: uploaded.id, split: { valSplit: 0.25, testSplit: 0.2, normalization: { [uploaded.id]: 'minmax', [byPath.id]: 'none' } }, watchedRunId: runId };
    resultOf(await first.dispatch('workspace:update', { clientId: 'tab', state: drafts }));
    const saved = resultOf(await first.dispatch('projects:save', { path: projectFile })) as { path: string };
    assert.equal(saved.path, projectFile);
    const kept = fs.readdirSync(path.join(scratch, 'saved', 'iris study-data'));
    assert.equal(kept.length, 1, 'the upload is copied beside the project (the file opened by path is not)');
    assert.equal(kept[0], 'uploaded iris.csv', 'under the name it was uploaded with');
    const info = resultOf(await first.dispatch('projects:info', {})) as ProjectsInfo;
    assert.equal(info.current, projectFile);
    assert.equal(info.recent[0], projectFile);
  });

  test('a new session opens it: the datasets, the workspace with this session\'s ids, and the run\'s model', async () => {
    const second = session();
    const opened = resultOf(await second.dispatch('projects:open', { path: projectFile })) as ProjectOpened;
    assert.deepEqual(opened.notes, []);
    assert.deepEqual(opened.datasets.map((entry) => entry.name), ['iris copy.csv', 'uploaded iris.csv']);
    assert.equal(opened.models, 1);
    const [reopenedPath, reopenedUpload] = opened.datasets;
    assert.equal(reopenedUpload.count, uploaded.count, 'the upload opens from its copy');
    const { state } = resultOf(await second.dispatch('workspace:get', {})) as { state: Workspace };
    assert.equal(state.datasetId, reopenedUpload.id, 'the selected dataset, by this session\'s id');
    assert.deepEqual(state.split?.normalization, { [reopenedUpload.id]: 'minmax', [reopenedPath.id]: 'none' });
    assert.equal(state.watchedRunId, undefined, 'runs of the old session are not watched: their models are open instead');
    const models = resultOf(await second.dispatch('models:list', {})) as { name: string }[];
    assert.equal(models.length, 1);
    const again = resultOf(await second.dispatch('projects:open', { path: projectFile })) as ProjectOpened;
    assert.deepEqual(again.datasets.map((entry) => entry.id), opened.datasets.map((entry) => entry.id), 'opened twice: the same datasets, not copies');
    assert.equal((resultOf(await second.dispatch('models:list', {})) as unknown[]).length, 1, 'and the same model');
  });

  test('a data file gone missing is named in the notes; the rest opens', async () => {
    fs.rmSync(copyOfIris);
    const third = session();
    const opened = resultOf(await third.dispatch('projects:open', { path: projectFile })) as ProjectOpened;
    assert.deepEqual(opened.datasets.map((entry) => entry.name), ['uploaded iris.csv']);
    assert.equal(opened.notes.length, 1);
    assert.match(opened.notes[0], /^iris copy\.csv was not opened: .*iris copy\.csv/);
    const { state } = resultOf(await third.dispatch('workspace:get', {})) as { state: Workspace };
    assert.deepEqual(Object.keys(state.split?.normalization ?? {}), [opened.datasets[0].id], 'choices of the missing dataset are dropped');
  });

  test('a damaged or foreign project file is refused, naming the file and what is wrong', async () => {
    const api = session();
    const cases: [string, RegExp][] = [
      ['{ not json', /is not a project file: /],
      [JSON.stringify({ format: 'something-else', version: 1 }), /format: /],
      [JSON.stringify({ format: 'nnstudio-project', version: 1, savedAt: '', datasets: [{ id: 'a', name: 'x', source: { kind: 'csv', path: '' } }], workspace: {}, runs: [] }), /datasets\.0\.source/],
    ];
    for (const [text, expected] of cases) {
      const file = path.join(scratch, 'bad.nnstudio');
      fs.writeFileSync(file, text);
      const answer = await api.dispatch('projects:open', { path: file });
      assert.ok(answer.error, text);
      assert.ok(answer.error.message.includes(file), `names the file: ${answer.error.message}`);
      assert.match(answer.error.message, expected);
    }
    const missing = await api.dispatch('projects:open', { path: path.join(scratch, 'nothing here.nnstudio') });
    assert.match(missing.error?.message ?? '', /there is no such file/);
    const unnamed = await api.dispatch('projects:save', {});
    assert.match(unnamed.error?.message ?? '', /give it a name/);
  });

  test('the last session is kept in the data folder on close and opened by the next session', async () => {
    const keeping = session(true);
    resultOf(await keeping.dispatch('datasets:open', { source: { kind: 'path', path: irisCsv } }));
    await keeping.close();
    const next = session(true);
    const opened = await next.openLastSession();
    assert.ok(opened, 'a last session was kept');
    assert.deepEqual(opened.datasets.map((entry) => entry.name), ['iris.csv']);
  });
});
