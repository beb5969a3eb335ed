// The run history in the UI, through `nnstudio serve` in headless Chromium: two runs recorded by the CLI are
// listed on the Models screen with their metrics; opening them adds their models to the session, where
// "Compare two runs" compares them; deleting one asks first and removes its files; a corrupt run file is
// named, not fatal.
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { skipWithoutBrowser } from './support/browser';
import { repoRoot } from './support/serve';
import { sequentialSteps } from './support/steps';
import { openStudio, type Studio } from './support/studio';
import { eventually, goTo } from './support/ui';
import { compareRuns, modelsTable } from './flows/models';
import { deleteSavedRun, openSavedRun, readSavedRuns, savedRunsCard } from './flows/savedRuns';

interface TrainedRun {
  runId: string;
  test: { accuracy: number };
}

describe('saved runs: listed, opened, compared and deleted on the Models screen', { skip: skipWithoutBrowser() }, () => {
  let studio: Studio | undefined;
  let dataDir: string;
  const runs: TrainedRun[] = [];
  /** The runs' accessible names in the table, and their models' names once opened. */
  const labels: string[] = [];
  const modelNames: string[] = [];
  const step = sequentialSteps(() => studio);
  const page = () => studio!.page;
  const runsDir = () => path.join(dataDir, 'runs');

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-e2e-runs-'));
    // Two runs recorded the way a user records them: `nnstudio train`.
    for (const [epochs, lr] of [['4', '0.01'], ['2', '0.001']]) {
      const result = spawnSync(process.execPath, [
        path.join(repoRoot, 'bin', 'nnstudio.js'), 'train', '--data', path.join(repoRoot, 'resources', 'samples', 'iris.csv'),
        '--epochs', epochs, '--lr', lr, '--device', 'cpu', '--threads', '1', '--json', '--out', path.join(dataDir, `m${epochs}.safetensors`),
      ], { env: { ...process.env, NNSTUDIO_DATA_DIR: dataDir }, encoding: 'utf8' });
      assert.equal(result.status, 0, result.stderr);
      runs.push(JSON.parse(result.stdout));
    }
    const names = runs.map((run) => JSON.parse(fs.readFileSync(path.join(runsDir(), `${run.runId}.json`), 'utf8')).name as string);
    // Runs started in the same second share a name: the table then adds the id, and so does the second model.
    const shared = names[0] === names[1];
    runs.forEach((run, index) => labels.push(shared ? `${names[index]} (${run.runId})` : names[index]));
    modelNames.push(names[0], shared ? `${names[1]} (${runs[1].runId})` : names[1]);
    fs.writeFileSync(path.join(runsDir(), 'damaged.json'), '{"formatVersion": 1');
    process.env.NNSTUDIO_DATA_DIR = dataDir;
    studio = await openStudio();
  }, { timeout: 90_000 });

  after(async () => {
    await studio?.close();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  step('the Models screen lists the saved runs, newest first, with their key metrics', 20_000, async () => {
    await goTo(page(), 'Models');
    // Read until one reading has both parts: the list may be drawn again (a refresh) between the header and the rows.
    const table = await eventually(async () => {
      const shown = await readSavedRuns(page());
      assert.equal(shown.rows.length, 2);
      assert.equal(shown.columns.length, 8);
      return shown;
    });
    assert.deepEqual(table.columns, ['Date', 'Data', 'Model', 'Epochs', 'Test accuracy / R²', 'Macro F1', 'Status', 'Actions']);
    const [newer, older] = table.rows;
    assert.deepEqual(newer.slice(1, 4), ['iris.csv', 'dense:100:relu,dense:3', '2']);
    assert.deepEqual(older.slice(1, 4), ['iris.csv', 'dense:100:relu,dense:3', '4']);
    assert.equal(older[4], `${(runs[0].test.accuracy * 100).toFixed(1)}%`);
    assert.match(older[5], /^0\.\d{3}$/);
    assert.equal(older[6], 'completed');
    assert.match(older[0], /^\d{4}-\d\d-\d\d \d\d:\d\d$/);
    await savedRunsCard(page()).getByText('1 unreadable file skipped').click();
    await savedRunsCard(page()).getByText(/^damaged\.json: not valid JSON/).waitFor();
  });

  step('opening both runs adds their models to the session, and they compare', 30_000, async () => {
    for (const label of labels) await openSavedRun(page(), label);
    await eventually(async () => {
      const models = await modelsTable(page()).locator('tbody > tr > td:first-child').allTextContents();
      assert.deepEqual(models.map((text) => text.trim()), modelNames);
    });
    const opened = page().getByRole('table', { name: 'Runs saved on this computer' }).getByRole('button', { name: `Open ${labels[0]}`, exact: true });
    assert.equal(await opened.textContent(), 'Opened');
    assert.equal(await opened.isDisabled(), true);

    const metrics = await compareRuns(page(), modelNames[0], modelNames[1]);
    // The comparison reads the opened models' own test metrics, the ones the CLI printed.
    assert.equal(parseFloat(metrics['Test accuracy'][0]), Number((runs[0].test.accuracy * 100).toFixed(2)));
    assert.equal(parseFloat(metrics['Test accuracy'][1]), Number((runs[1].test.accuracy * 100).toFixed(2)));
    assert.equal(metrics['Epochs'][0], '4');
    assert.equal(metrics['Epochs'][1], '2');
  });

  step('deleting asks first: Keep leaves the run, Delete removes it and its model file', 20_000, async () => {
    await deleteSavedRun(page(), labels[1], false);
    assert.equal((await readSavedRuns(page())).rows.length, 2);
    assert.ok(fs.existsSync(path.join(runsDir(), `${runs[1].runId}.json`)));

    await deleteSavedRun(page(), labels[1]);
    await eventually(async () => assert.equal((await readSavedRuns(page())).rows.length, 1));
    assert.equal(fs.existsSync(path.join(runsDir(), `${runs[1].runId}.json`)), false);
    assert.equal(fs.existsSync(path.join(runsDir(), `${runs[1].runId}.safetensors`)), false);
    assert.deepEqual(studio!.pageErrors, []);
  });
});
