// The run history reports what it cannot read instead of pretending there is nothing: only a runs folder not
// made yet (no run recorded so far) is an empty history; a path that is not a folder is that error, named.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RunNotFoundError, RunStore } from '../../../app/services/runs';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-runstore-errors-'));
after(() => fs.rmSync(scratch, { recursive: true, force: true }));

test('a runs folder that is a file: looking a run up says so, rather than "no saved run"', async () => {
  const notAFolder = path.join(scratch, 'runs');
  fs.writeFileSync(notAFolder, 'not a folder');
  const store = new RunStore(notAFolder);
  await assert.rejects(store.get('20250314'), (error: NodeJS.ErrnoException) => {
    assert.ok(!(error instanceof RunNotFoundError), `not "no saved run": ${error.message}`);
    assert.equal(error.code, 'ENOTDIR');
    assert.ok(error.message.includes(notAFolder), error.message);
    return true;
  });
  await assert.rejects(store.list(), { code: 'ENOTDIR' });
});

test('a runs folder not made yet: no run, said as such', async () => {
  const store = new RunStore(path.join(scratch, 'never-made'));
  await assert.rejects(store.get('20250314'), RunNotFoundError);
  assert.deepEqual(await store.list(), { runs: [], problems: [] });
});
