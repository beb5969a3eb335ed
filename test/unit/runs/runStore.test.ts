// The run store (app/services/runs.ts): where runs live on each platform, and saving, listing, finding,
// opening and deleting them in a temporary folder, with unreadable files skipped and named.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import { encodeRun } from '../../../app/core/runs/runFile';
import { dataDirectory, platformDataDirectory, recordRun, RunNotFoundError, runsDirectory, RunStore, setDataDirectory } from '../../../app/services/runs';
import { fakeRun } from './fixtures';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-runstore-'));
after(() => fs.rmSync(scratch, { recursive: true, force: true }));

describe('the data folder', () => {
  test('per platform, with XDG_DATA_HOME, APPDATA and NNSTUDIO_DATA_DIR', () => {
    assert.equal(platformDataDirectory({}, 'linux', '/home/ada'), '/home/ada/.local/share/nnstudio');
    assert.equal(platformDataDirectory({ XDG_DATA_HOME: '/xdg' }, 'linux', '/home/ada'), '/xdg/nnstudio');
    assert.equal(platformDataDirectory({ XDG_DATA_HOME: 'relative' }, 'linux', '/home/ada'), '/home/ada/.local/share/nnstudio', 'a relative XDG_DATA_HOME is ignored');
    assert.equal(platformDataDirectory({}, 'darwin', '/Users/ada'), '/Users/ada/Library/Application Support/NN Studio');
    assert.equal(platformDataDirectory({ APPDATA: 'C:\\Users\\ada\\AppData\\Roaming' }, 'win32', 'C:\\Users\\ada'), 'C:\\Users\\ada\\AppData\\Roaming\\NN Studio');
    assert.equal(platformDataDirectory({}, 'win32', 'C:\\Users\\ada'), 'C:\\Users\\ada\\AppData\\Roaming\\NN Studio');
    assert.equal(runsDirectory({ NNSTUDIO_DATA_DIR: '/tmp/x' }), path.resolve('/tmp/x/runs'));
  });

  test('a host may set the folder (Electron\'s userData); NNSTUDIO_DATA_DIR still wins', () => {
    try {
      setDataDirectory('/host/data');
      assert.equal(dataDirectory({}), '/host/data');
      assert.equal(dataDirectory({ NNSTUDIO_DATA_DIR: '/env/data' }), '/env/data');
    } finally {
      setDataDirectory(undefined);
    }
    assert.equal(dataDirectory({ HOME: '/home/ada' }), platformDataDirectory({ HOME: '/home/ada' }));
  });
});

describe('the store', () => {
  const directory = path.join(scratch, 'runs');
  const store = new RunStore(directory);

  test('a missing folder lists nothing', async () => {
    assert.deepEqual(await new RunStore(path.join(scratch, 'none')).list(), { runs: [], problems: [] });
  });

  test('records runs with their model files, lists them newest first, finds them by id or prefix', async () => {
    const older = fakeRun({ lr: 0.1 });
    const newer = fakeRun({ lr: 0.05, status: 'cancelled' });
    const first = await recordRun(older.outcome, { startedAt: new Date(Date.UTC(2025, 0, 1, 12)), request: older.request }, store);
    const second = await recordRun(newer.outcome, { startedAt: new Date(Date.UTC(2025, 0, 2, 12)), request: newer.request }, store);
    assert.match(first.id, /^20250101-120000-[0-9a-f]{8}$/);
    assert.equal(first.modelFile, `${first.id}.safetensors`);
    assert.deepEqual(fs.readdirSync(directory).sort(), [`${first.id}.json`, `${first.id}.safetensors`, `${second.id}.json`, `${second.id}.safetensors`].sort(), 'no temporary files left');

    const listing = await store.list();
    assert.deepEqual(listing.runs.map((run) => run.id), [second.id, first.id]);
    assert.equal(listing.runs[0].status, 'cancelled');
    assert.equal(listing.runs[1].testAccuracy, 0.75);
    assert.equal(listing.problems.length, 0);

    assert.equal((await store.get(first.id)).options.lr, 0.1);
    assert.equal((await store.get('20250102')).id, second.id, 'a unique prefix finds the run');
    await assert.rejects(store.get('2025'), /"2025" matches 2 runs/);
    await assert.rejects(store.get('20991231'), (error: unknown) => error instanceof RunNotFoundError && /no saved run "20991231"/.test(error.message));
    await assert.rejects(store.get('../runs/x'), /is not a run id/);

    const model = await store.loadModel(await store.get(first.id));
    assert.deepEqual(Array.from(model.parameters), Array.from(older.outcome.model.parameters));
    assert.deepEqual(model.labels, ['no', 'yes']);
    assert.equal(model.training?.history.length, 3);
  });

  test('corrupt files and future versions are named and skipped; the rest still list', async () => {
    fs.writeFileSync(path.join(directory, 'broken.json'), '{"formatVersion": 1, "id": ');
    const future = { ...JSON.parse(encodeRun({ ...(await store.get('20250101')), id: 'future' })), formatVersion: 9 };
    fs.writeFileSync(path.join(directory, 'future.json'), JSON.stringify(future));
    fs.writeFileSync(path.join(directory, 'notes.txt'), 'not a run');
    fs.writeFileSync(path.join(directory, 'x.json.tmp-1-abc'), 'a half-written file');
    const listing = await store.list();
    assert.equal(listing.runs.length, 2);
    assert.deepEqual(listing.problems.map((problem) => problem.file), ['broken.json', 'future.json']);
    assert.match(listing.problems[0].message, /^broken\.json: not valid JSON/);
    assert.match(listing.problems[1].message, /^future\.json: format version 9 is not supported.*newer NN Studio/);
    await assert.rejects(store.get('future'), /future\.json: format version 9/);
  });

  test('a run whose model file went missing lists, but opening it says which file is missing', async () => {
    const record = await store.get('20250101');
    fs.renameSync(path.join(directory, record.modelFile!), path.join(scratch, 'moved.safetensors'));
    assert.equal((await store.list()).runs.length, 2);
    await assert.rejects(store.loadModel(record), new RegExp(`run ${record.id}: its model file .*${record.id}\\.safetensors is missing`));
    fs.renameSync(path.join(scratch, 'moved.safetensors'), path.join(directory, record.modelFile!));
  });

  test('delete removes the run file and its model file; a corrupt file can be deleted too', async () => {
    const record = await store.get('20250101');
    assert.equal(await store.delete(record.id), record.id);
    assert.equal(fs.existsSync(path.join(directory, `${record.id}.json`)), false);
    assert.equal(fs.existsSync(path.join(directory, `${record.id}.safetensors`)), false);
    await assert.rejects(store.delete(record.id), RunNotFoundError);
    assert.equal(await store.delete('broken'), 'broken');
    assert.deepEqual((await store.list()).problems.map((problem) => problem.file), ['future.json']);
  });

  test('a failed save leaves no run behind (the folder is a file)', async () => {
    const blocked = path.join(scratch, 'blocked');
    fs.writeFileSync(blocked, 'in the way');
    const run = fakeRun();
    await assert.rejects(recordRun(run.outcome, { startedAt: new Date(), request: run.request }, new RunStore(blocked)));
    assert.equal(fs.readFileSync(blocked, 'utf8'), 'in the way');
  });
});
