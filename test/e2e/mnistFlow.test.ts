// The MNIST flow end to end, through `nnstudio serve` in headless Chromium: the built-in MNIST (a subset,
// through the opener's limit), a CNN preset, one epoch on the CPU, and the 10 × 10 confusion matrix.
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import { skipWithoutBrowser } from './support/browser';
import { sequentialSteps } from './support/steps';
import { openStudio, type Studio } from './support/studio';
import { eventually, readTable, section } from './support/ui';
import { openMnist, readDatasetSummary } from './flows/data';
import { choosePreset, setTrainingSettings, waitModelFits } from './flows/model';
import { startTraining, waitCompleted } from './flows/train';
import { commonestMistake, openCell, readCellConfidences, readClassReport, readConfusion, readHeadline } from './flows/evaluate';
import { drawStrokes, readDigitPrediction, strokesOfOne } from './flows/digit';
import { mnistFlowPlan } from './flows/plans';

const digits = ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'];

describe('MNIST flow: built-in digits, a CNN preset, one epoch, the confusion matrix', { skip: skipWithoutBrowser() }, () => {
  let studio: Studio | undefined;
  const step = sequentialSteps(() => studio);
  const page = () => studio!.page;

  before(async () => {
    studio = await openStudio();
  }, { timeout: 60_000 });

  after(async () => {
    await studio?.close();
  });

  step('open the built-in MNIST, a subset of its training images', 30_000, async () => {
    await openMnist(page(), mnistFlowPlan.limit);
    const summary = await readDatasetSummary(page());
    assert.equal(summary['Examples'], mnistFlowPlan.limit.toLocaleString('en-US'));
    assert.equal(summary['Image shape'], '1 × 28 × 28');
    assert.equal(summary['Classes'], '10');
    // The preview is a grid of labelled digit images.
    await eventually(async () => assert.ok((await section(page(), 'Preview').getByLabel(/^an image labelled \d$/).count()) >= 10, 'a grid of digits'));
    const histogram = await page().getByRole('list', { name: 'Examples per class' }).getByRole('listitem').allTextContents();
    assert.deepEqual(histogram.map((item) => item.trim().split(/\s+/)[0]), digits);
  });

  step(`build a CNN from the ${mnistFlowPlan.preset} preset`, 20_000, async () => {
    await choosePreset(page(), mnistFlowPlan.preset);
    await waitModelFits(page());
    const layers = await readTable(section(page(), 'Layers').getByRole('table'));
    assert.equal(layers.rows[0][3], '1 × 28 × 28', 'the input row: one 28 × 28 channel');
    assert.equal(layers.rows[layers.rows.length - 1][3], '10', 'ten class scores at the end');
    await setTrainingSettings(page(), { epochs: mnistFlowPlan.epochs, batchSize: mnistFlowPlan.batchSize, device: 'cpu' });
  });

  step('train one epoch on the CPU', 120_000, async () => {
    await startTraining(page());
    const outcome = await waitCompleted(page(), 110_000);
    assert.match(outcome, /after 1 epoch · /);
    assert.match(outcome, /test accuracy [\d.]+%/);
  });

  step('read the 10 × 10 confusion matrix of the test images', 20_000, async () => {
    await page().getByRole('button', { name: 'See the evaluation →' }).click();
    const headline = await readHeadline(page());
    assert.equal(headline.examples, 10_000, "MNIST's test images");
    assert.ok(headline.accuracy > 0.5, `one epoch on ${mnistFlowPlan.limit} images learns something: ${headline.accuracy}`);
    const confusion = await readConfusion(page());
    assert.deepEqual(confusion.labels, digits);
    assert.deepEqual(confusion.rowLabels, digits);
    assert.equal(confusion.counts.length, 10);
    for (const row of confusion.counts) assert.equal(row.length, 10);
    assert.equal(confusion.counts.flat().reduce((sum, count) => sum + count, 0), 10_000);
    const report = await readClassReport(page());
    assert.deepEqual(report.rows.map((row) => row.label), digits);
    for (const row of report.rows) assert.ok(row.f1 >= 0 && row.f1 <= 1, `${row.label}: F1 ${row.f1}`);
    assert.deepEqual(studio!.pageErrors, [], 'no errors in the page');
  });

  step('open a confusion cell: its digit images, most confident first', 20_000, async () => {
    const mistake = commonestMistake(await readConfusion(page()));
    await openCell(page(), mistake.actual, mistake.predicted);
    const confidences = await eventually(async () => {
      const shown = await readCellConfidences(page());
      assert.equal(shown.length, Math.min(mistake.count, 48), 'the first page of the cell');
      return shown;
    });
    assert.ok(confidences.every((value, index) => index === 0 || confidences[index - 1] >= value), `sorted: ${confidences}`);
    const images = page().getByRole('list', { name: 'Examples, most confident first' }).getByLabel(/^an image/);
    assert.equal(await images.count(), confidences.length, 'an image per example');
    await page().getByRole('button', { name: 'Close examples' }).click();
  });

  step('draw a digit: the class probabilities follow the drawing', 20_000, async () => {
    const card = section(page(), 'Draw a digit');
    await card.waitFor();
    await drawStrokes(page(), strokesOfOne);
    const drawn = await eventually(async () => {
      const shown = await readDigitPrediction(page());
      assert.match(shown.verdict, /^Prediction: \d \([\d.]+%\)$/);
      assert.deepEqual(Object.keys(shown.probabilities), digits, 'a bar per class');
      return shown;
    });
    const total = Object.values(drawn.probabilities).reduce((sum, p) => sum + p, 0);
    assert.ok(Math.abs(total - 1) < 0.02, `the probabilities add up to 1 (shown rounded): ${total}`);
    const [best] = Object.entries(drawn.probabilities).sort((a, b) => b[1] - a[1])[0];
    assert.match(drawn.verdict, new RegExp(`^Prediction: ${best} `), 'the verdict is the most probable class');
    assert.equal(best, '1', `a drawn 1 is read as a 1: ${JSON.stringify(drawn.probabilities)}`);
    // Clearing forgets the drawing and its prediction.
    await card.getByRole('button', { name: 'Clear drawing' }).click();
    await page().getByText('Draw a digit to see what the model thinks it is.').waitFor();
    assert.deepEqual(studio!.pageErrors, [], 'no errors in the page');
  });
});
