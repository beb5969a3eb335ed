// The Search screen end to end, through `nnstudio serve` in headless Chromium: open a CSV, start a small
// search, watch its trial runs arrive, read the leaderboard, and evaluate the best model in one click.
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { skipWithoutBrowser } from './support/browser';
import { flowerCsv, flowerLabelColumn, scratchDir, writeFile } from './support/data';
import { sequentialSteps } from './support/steps';
import { openStudio, type Studio } from './support/studio';
import { goTo, navButton, readTable, screenHeading, section } from './support/ui';
import { openCsv } from './flows/data';
import { readHeadline } from './flows/evaluate';

describe('Search flow: a small search on a CSV, its leaderboard, the best model evaluated', { skip: skipWithoutBrowser() }, () => {
  let studio: Studio | undefined;
  let dir: string;
  let csv: string;
  const step = sequentialSteps(() => studio);
  const page = () => studio!.page;

  before(async () => {
    dir = scratchDir('search');
    csv = writeFile(dir, 'flowers.csv', flowerCsv(240, 3));
    studio = await openStudio();
  }, { timeout: 60_000 });

  after(async () => {
    await studio?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  step('open a CSV and go to Search', 20_000, async () => {
    await openCsv(page(), csv, flowerLabelColumn);
    await goTo(page(), 'Search');
    assert.match(await navButton(page(), 'Search').innerText(), /Try many models/);
  });

  step('start a search of 4 trials: the trial runs arrive, then the leaderboard', 120_000, async () => {
    const settings = section(page(), 'Settings');
    await settings.getByLabel('Trials').fill('4');
    await settings.getByLabel('First epochs').fill('2');
    await settings.getByLabel('Last epochs').fill('4');
    await settings.getByLabel('Keep 1 in').fill('2');
    await page().getByRole('button', { name: 'Start search' }).click();
    await page().getByRole('status').filter({ hasText: /^Done$/ }).waitFor({ timeout: 100_000 });
    const progress = section(page(), 'Progress');
    assert.match(await progress.innerText(), /6 of 6 trial runs · 4 × 2 epochs, then 2 × 4 epochs/);
    const leaderboard = await readTable(section(page(), 'Leaderboard').getByRole('table'));
    assert.equal(leaderboard.rows.length, 4);
    const scores = leaderboard.rows.map((row) => Number(row[3]));
    assert.deepEqual(scores, [...scores].sort((a, b) => b - a), 'the best validation accuracy first');
    const runs = await readTable(section(page(), 'Trial runs').getByRole('table'));
    assert.equal(runs.rows.length, 6);
    assert.match(await navButton(page(), 'Search').innerText(), /best 0\.\d{3}/);
  });

  step('a reload comes back to the Search screen and the finished search', 30_000, async () => {
    await page().reload();
    await screenHeading(page(), 'Search').waitFor();
    await page().getByRole('status').filter({ hasText: /^Done$/ }).waitFor();
    const leaderboard = await readTable(section(page(), 'Leaderboard').getByRole('table'));
    assert.equal(leaderboard.rows.length, 4);
  });

  step('evaluate the best model in one click', 20_000, async () => {
    await page().getByRole('button', { name: 'Evaluate the best model' }).click();
    const headline = await readHeadline(page());
    assert.match(headline.title, /search-1, trial \d/);
    assert.ok(headline.accuracy > 0.3, `test accuracy ${headline.accuracy}`);
    // a reload shows the same evaluation (the workspace names the search)
    await page().reload();
    await screenHeading(page(), 'Evaluate').waitFor();
    assert.deepEqual(await readHeadline(page()), headline);
  });
});
