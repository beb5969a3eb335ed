// The session's state lives on the server, through `nnstudio serve` in headless Chromium: a reload in the
// middle of a training finds the same dataset, model, settings and the live run; a second tab sees the run
// going on, cannot start another, and sees the first tab's edits; switching to another dataset clears the
// finished run's results from the Train screen; "Continue training" asks how many epochs to add; a run that
// another client of the session's API starts shows on the Train screen.
import { describe } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { skipWithoutBrowser } from './support/browser';
import { flowerCsv, flowerIgnoredColumn, flowerLabelColumn, writeFile } from './support/data';
import { sequentialSteps } from './support/steps';
import { useStudioWithScratch, waitConnected } from './support/studio';
import { eventually, goTo, screenHeading, section } from './support/ui';
import { datasetTab, openCsv, readDatasetSummary } from './flows/data';
import { buildTwoWideLayers, layersText, setTrainingSettings } from './flows/model';
import { progressBar, readProgress, startTraining, waitState, waitTraining } from './flows/train';
import { connectApi } from './support/apiClient';

// Two 512-wide layers and batch 8: long enough on 2 CPU cores to reload and open a second tab while it runs.
const plan = { rows: 1500, epochs: 300, batchSize: 8, hiddenUnits: 512 };
const model = `dense:${plan.hiddenUnits}:relu,dense:${plan.hiddenUnits}:relu,dense:3`;

describe('session state on the server: reload, a second tab, switching data, continue', { skip: skipWithoutBrowser() }, () => {
  let flowers = '';
  let other = '';
  const scratch = useStudioWithScratch('session', (dir) => {
    flowers = writeFile(dir, 'flowers.csv', flowerCsv(plan.rows, 3));
    other = writeFile(dir, 'other flowers.csv', flowerCsv(300, 5));
  });
  const step = sequentialSteps(() => scratch.studio);
  const page = () => scratch.studio!.page;
  let second: Page | undefined;

  step('train a model on a CSV', 60_000, async () => {
    await openCsv(page(), flowers, flowerLabelColumn, { [flowerIgnoredColumn]: 'Ignore' });
    await buildTwoWideLayers(page(), plan.hiddenUnits);
    await setTrainingSettings(page(), { batchSize: plan.batchSize, epochs: plan.epochs, device: 'cpu' });
    await startTraining(page());
    // The session has the run once Start is answered (its progress card shows); a reload before that could
    // unload the page before its socket passed the request on (Chromium drops what it had not sent).
    await progressBar(page()).waitFor();
  });

  step('a reload comes back to the Train screen, the live run and the same model and settings', 60_000, async () => {
    // At once after Start's answer: the page may not have sent the workspace that names the run yet; it is shown all the same.
    await page().reload();
    await waitConnected(page());
    await screenHeading(page(), 'Train').waitFor();
    const progress = await waitTraining(page());
    assert.ok((progress.epoch ?? 0) >= 1, `the run, going on: epoch ${progress.epoch}`);
    await eventually(async () => assert.ok(((await readProgress(page())).step ?? 0) !== progress.step || (await readProgress(page())).epoch !== progress.epoch, 'live steps after the reload'), 15_000);
    await goTo(page(), 'Model');
    assert.equal(await layersText(page()), model, 'the layers as edited');
    assert.equal(await section(page(), 'Training settings').getByRole('spinbutton', { name: 'Epochs' }).inputValue(), String(plan.epochs));
    await goTo(page(), 'Data');
    await eventually(async () => assert.equal((await readDatasetSummary(page()))['Examples'], plan.rows.toLocaleString('en-US'), 'the dataset is selected'));
  });

  step('a second tab sees the run, offers no Start, and sees the first tab\'s edits', 60_000, async () => {
    second = await scratch.studio!.context.newPage();
    await second.goto(page().url());
    await waitConnected(second);
    await goTo(second, 'Train');
    await waitTraining(second);
    assert.equal(await second.getByRole('button', { name: /^(Start training|Train again)$/ }).count(), 0, 'no Start while the session trains');
    await goTo(page(), 'Model');
    await section(page(), 'Training settings').getByRole('spinbutton', { name: 'Batch size' }).fill('16');
    await goTo(second, 'Model');
    await eventually(async () => assert.equal(await section(second!, 'Training settings').getByRole('spinbutton', { name: 'Batch size' }).inputValue(), '16'), 10_000);
  });

  step('cancel in one tab: both show it; Continue asks how many epochs to add', 60_000, async () => {
    await goTo(page(), 'Train');
    await page().getByRole('button', { name: 'Cancel', exact: true }).click();
    await waitState(page(), 'Finished: cancelled', 30_000);
    await goTo(second!, 'Train');
    await waitState(second!, 'Finished: cancelled', 30_000);
    const more = page().getByRole('spinbutton', { name: 'Epochs to add' });
    const left = Number(await more.inputValue());
    const stopped = (await readProgress(page())).epoch ?? 0;
    assert.ok(left >= plan.epochs - stopped && left <= plan.epochs, `the epochs the plan has left: ${left} (stopped in ${stopped})`);
  });

  step('another dataset: the finished run\'s results leave the Train screen', 60_000, async () => {
    await openCsv(page(), other, flowerLabelColumn, { [flowerIgnoredColumn]: 'Ignore' });
    await goTo(page(), 'Train');
    assert.equal(await page().getByRole('button', { name: 'Continue training' }).count(), 0, 'nothing to continue on this data');
    assert.equal(await page().getByRole('progressbar', { name: 'Training progress' }).count(), 0, 'no run shown');
    // the other tab lists the dataset this one opened
    await goTo(second!, 'Data');
    await datasetTab(second!, 'other flowers.csv').waitFor({ timeout: 10_000 });
    await second?.close();
  });

  step('a run another client of the session starts (a script on its API) shows on the Train screen, and cancels', 60_000, async () => {
    const script = await connectApi(scratch.studio!.serve.browserUrl);
    try {
      const datasets = await script.call('datasets:list', {});
      const dataset = datasets.find((entry) => entry.name === 'other flowers.csv');
      assert.ok(dataset, `the page's dataset is the session's: ${datasets.map((entry) => entry.name).join(', ')}`);
      const { runId } = await script.call('training:start', { datasetId: dataset.id, model: { layers: model }, epochs: plan.epochs, batchSize: plan.batchSize, device: 'cpu' });
      // no workspace names this run: the page learns of it from its progress
      const progress = await waitTraining(page());
      assert.ok((progress.step ?? 0) >= 1, `its steps: ${JSON.stringify(progress)}`);
      assert.equal(await page().getByRole('button', { name: /^(Start training|Train again)$/ }).count(), 0, 'no Start while it trains');
      await page().getByRole('button', { name: 'Cancel', exact: true }).click();
      await waitState(page(), 'Finished: cancelled', 30_000);
      assert.equal((await script.call('training:status', { runId })).state, 'finished', 'the page cancelled the script\'s run');
    } finally {
      script.close();
    }
    assert.deepEqual(scratch.studio!.pageErrors, [], 'no errors in the page');
  });
});
