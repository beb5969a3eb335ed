// Projects end to end, through `nnstudio serve` in headless Chromium: a session with an uploaded CSV, its
// model and a finished run is saved as a project from the navigation rail; the server stops and starts
// again on the same data folder: the last session comes back by itself, and the project opens from the
// recent list with its dataset and the run's model, without copies of what is already open.
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { skipWithoutBrowser } from './support/browser';
import { flowerCsv, flowerIgnoredColumn, flowerLabelColumn, writeFile } from './support/data';
import { sequentialSteps } from './support/steps';
import { openStudio, type Studio } from './support/studio';
import { eventually, goTo, readTable } from './support/ui';
import { openCsv, readDatasetSummary } from './flows/data';
import { setTrainingSettings, waitModelFits } from './flows/model';
import { startTraining, waitCompleted } from './flows/train';
import type { Page } from 'playwright-core';

const plan = { rows: 240, epochs: 3, project: 'flowers study' };

function projectArea(page: Page) {
  return page.getByRole('region', { name: 'Project' });
}

async function readModelNames(page: Page): Promise<string[]> {
  await goTo(page, 'Models');
  const table = await readTable(page.getByRole('table', { name: /models/i }).first());
  return table.rows.map((row) => row[0]);
}

describe('projects: save, restart, the last session back, open from the recent list', { skip: skipWithoutBrowser() }, () => {
  let studio: Studio | undefined;
  let dataDir = '';
  let file = '';
  let models: string[] = [];
  const step = sequentialSteps(() => studio);
  const page = () => studio!.page;

  before(async () => {
    // one data folder for both servers: the projects, the run history and the last session live there
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-e2e-projects-'));
    process.env.NNSTUDIO_DATA_DIR = dataDir;
    file = writeFile(dataDir, 'flowers.csv', flowerCsv(plan.rows, 7));
    studio = await openStudio();
  }, { timeout: 60_000 });

  after(async () => {
    await studio?.close();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  step('an uploaded CSV, a model and a finished run are saved as a project', 90_000, async () => {
    await openCsv(page(), file, flowerLabelColumn, { [flowerIgnoredColumn]: 'Ignore' });
    await goTo(page(), 'Model');
    await waitModelFits(page());
    await setTrainingSettings(page(), { epochs: plan.epochs, device: 'cpu' });
    await startTraining(page());
    await waitCompleted(page(), 60_000);
    models = await readModelNames(page());
    assert.equal(models.length, 1);
    assert.equal(await projectArea(page()).getByText('Unsaved session').count(), 1);
    await projectArea(page()).getByRole('button', { name: 'Save as project…' }).click();
    const dialog = page().getByRole('dialog', { name: 'Save the session as a project' });
    await dialog.getByRole('textbox', { name: 'Project name' }).fill(plan.project);
    await dialog.getByRole('button', { name: 'Save', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    const saved = path.join(dataDir, 'projects', `${plan.project}.nnstudio`);
    const status = projectArea(page()).getByRole('status');
    await eventually(async () => assert.match((await status.textContent()) ?? '', /^Saved at \d\d:\d\d/));
    assert.equal(await status.getAttribute('title'), path.join(dataDir, 'projects', `${plan.project}.nnstudio`), 'the file, as the tooltip');
    assert.ok(fs.existsSync(saved), 'the project file');
    assert.deepEqual(fs.readdirSync(path.join(dataDir, 'projects', `${plan.project}-data`)), ['flowers.csv'], 'the upload beside it');
    assert.equal(await projectArea(page()).getByText(plan.project, { exact: true }).count(), 1, 'the rail names the project');
    assert.equal(await projectArea(page()).getByRole('button', { name: 'Save project' }).count(), 1);
    assert.deepEqual(studio!.pageErrors, []);
  });

  step('the server restarts: the last session comes back by itself', 60_000, async () => {
    await studio!.close();
    studio = await openStudio();
    await eventually(async () => assert.equal((await readDatasetSummary(page()))['Examples'], String(plan.rows), 'the dataset is open and selected'), 15_000);
    // the run's model, opened from the run history (named as the history names it)
    const restored = await readModelNames(page());
    assert.equal(restored.length, 1, JSON.stringify(restored));
    assert.match(restored[0], /^flowers\.csv/);
    models = restored;
  });

  step('the project opens from the recent list: the same dataset and model, no copies', 60_000, async () => {
    await projectArea(page()).getByRole('button', { name: 'Open project…' }).click();
    const dialog = page().getByRole('dialog', { name: 'Open a project' });
    await dialog.getByRole('button', { name: plan.project }).click();
    await dialog.waitFor({ state: 'hidden' });
    await eventually(async () => assert.equal((await projectArea(page()).getByRole('status').textContent())?.trim(), `Opened ${plan.project}: 1 dataset, 1 model`));
    assert.deepEqual(await readModelNames(page()), models);
    await goTo(page(), 'Data');
    assert.equal(await page().getByRole('button', { name: /^flowers\.csv/ }).count(), 1, 'one flowers.csv, not two');
    await goTo(page(), 'Model');
    await waitModelFits(page());
    assert.deepEqual(studio!.pageErrors, []);
  });
});
