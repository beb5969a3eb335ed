// Training control in the UI, through `nnstudio serve` in headless Chromium: a run with a cosine
// learning-rate schedule is paused, given a new learning rate that the next steps use, resumed, cancelled,
// and continued from its last checkpoint to the planned number of epochs.
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { skipWithoutBrowser } from './support/browser';
import { flowerCsv, flowerIgnoredColumn, flowerLabelColumn, scratchDir, writeFile } from './support/data';
import { sequentialSteps } from './support/steps';
import { openStudio, type Studio } from './support/studio';
import { eventually, goTo, section } from './support/ui';
import { openCsv } from './flows/data';
import { buildTwoWideLayers, setTrainingSettings } from './flows/model';
import { readProgress, readRunFigures, startTraining, waitCompleted, waitState, waitTraining } from './flows/train';

// Two 512-wide layers and batch 8: several seconds on 2 CPU cores, time enough to pause and cancel it.
const plan = { rows: 1500, epochs: 60, batchSize: 8, hiddenUnits: 512, lr: 0.001, newLr: 0.0005 };

describe('training control: schedule, pause, a new learning rate, cancel, continue', { skip: skipWithoutBrowser() }, () => {
  let studio: Studio | undefined;
  let dir: string;
  const step = sequentialSteps(() => studio);
  const page = () => studio!.page;

  before(async () => {
    dir = scratchDir('control');
    studio = await openStudio();
  }, { timeout: 60_000 });

  after(async () => {
    await studio?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  step('an MLP with a cosine schedule: the learning rate shown falls while it trains', 60_000, async () => {
    await openCsv(page(), writeFile(dir, 'flowers.csv', flowerCsv(plan.rows, 3)), flowerLabelColumn, { [flowerIgnoredColumn]: 'Ignore' });
    await buildTwoWideLayers(page(), plan.hiddenUnits);
    await setTrainingSettings(page(), { optimizer: 'Adam', learningRate: plan.lr, batchSize: plan.batchSize, epochs: plan.epochs, device: 'cpu' });
    const settings = section(page(), 'Training settings');
    await settings.getByRole('combobox', { name: 'Learning-rate schedule' }).selectOption({ label: 'Cosine' });
    await settings.getByRole('spinbutton', { name: 'Final learning rate' }).fill('0');
    await startTraining(page());
    await waitTraining(page());
    const first = Number((await readRunFigures(page()))['Learning rate']);
    assert.ok(first > 0 && first <= plan.lr, `a rate from the schedule: ${first}`);
    await eventually(async () => {
      const later = Number((await readRunFigures(page()))['Learning rate']);
      assert.ok(later < first, `cosine decays: ${first} then ${later}`);
    }, 10_000);
  });

  step('pause, apply a new learning rate, resume: the steps use it', 30_000, async () => {
    await page().getByRole('button', { name: 'Pause', exact: true }).click();
    const paused = await waitState(page(), 'Paused');
    const rate = page().getByRole('spinbutton', { name: 'Learning rate' });
    assert.ok(Number(await rate.inputValue()) > 0, 'the field shows the current rate');
    await rate.fill(String(plan.newLr));
    await page().getByRole('button', { name: 'Apply', exact: true }).click();
    await page().getByRole('button', { name: 'Resume', exact: true }).click();
    await waitState(page(), 'Training');
    // The schedule now runs from the new base rate: at most half of what it was at the pause.
    await eventually(async () => {
      const progress = await readProgress(page());
      assert.ok((progress.step ?? 0) !== paused.step || progress.epoch !== paused.epoch, 'steps after the resume');
      const shown = Number((await readRunFigures(page()))['Learning rate']);
      assert.ok(shown > 0 && shown <= plan.newLr, `the new base rate scales the schedule: ${shown}`);
    }, 10_000);
  });

  step('cancel after a checkpoint, then continue from it to the planned epochs', 120_000, async () => {
    // Let at least one epoch end (a checkpoint) before cancelling.
    await eventually(async () => assert.ok(((await readProgress(page())).epoch ?? 1) >= 3, 'two epochs done'), 30_000);
    await page().getByRole('button', { name: 'Cancel', exact: true }).click();
    await waitState(page(), 'Finished: cancelled', 30_000);
    const stoppedAt = (await readProgress(page())).epoch ?? 0;
    const resume = page().getByRole('button', { name: 'Continue training' });
    await resume.click();
    await waitTraining(page());
    // The run names the checkpoint it goes on from (live progress may already be epochs further on a fast machine).
    await eventually(async () => {
      const shown = (await readRunFigures(page()))['Continued from'] ?? '';
      const epoch = Number(/^epoch (\d+)$/.exec(shown)?.[1]);
      assert.ok(epoch >= 2 && epoch <= stoppedAt, `it goes on from the last checkpoint: "${shown}" (stopped in epoch ${stoppedAt})`);
    }, 10_000);
    const outcome = await waitCompleted(page(), 110_000);
    assert.match(outcome, new RegExp(`after ${plan.epochs} epochs`));
    await goTo(page(), 'Models');
    assert.deepEqual(studio!.pageErrors, [], 'no errors in the page');
  });
});
