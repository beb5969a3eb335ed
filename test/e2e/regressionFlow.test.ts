// The regression flow end to end, through `nnstudio serve` in headless Chromium: open a CSV whose last column
// is a number with many distinct values (y = 3·x1 − 2·x2 + noise), see the inferred task "regression" with its
// reason and the column report, train an MLP on the CPU and read R² (not accuracy) on the Train screen,
// evaluate it: the predicted-vs-true scatter plot, the residual histogram and the worst predictions, and open
// one row's feature values by click and by keyboard; save the model, predict a new CSV without the target
// column (values in y's own units) and check the ONNX export gives the same values in onnxruntime.
import { describe } from 'node:test';
import * as fs from 'node:fs';
import assert from 'node:assert/strict';
import { skipWithoutBrowser } from './support/browser';
import { regressionColumns, regressionCsv, regressionRows, writeFile, type RegressionRow } from './support/data';
import { sequentialSteps } from './support/steps';
import { useStudioWithScratch } from './support/studio';
import { eventually, goTo, readTable, section } from './support/ui';
import { openUnlabeledCsv, readDatasetSummary, setSplits } from './flows/data';
import { choosePreset, removeLayer, setTrainingSettings, waitModelFits } from './flows/model';
import { startTraining, waitCompleted } from './flows/train';
import { evaluateWith } from './flows/evaluate';
import { exportOnnx, saveModel } from './flows/models';
import { predictFile, savePredictedCsv } from './flows/predict';
import * as ort from 'onnxruntime-node';
import { onnxInputName, onnxRegressionOutputName } from '../../app/core/interop/onnxExport';
import { canvasIsDrawn, numberOf, openRegressionCsv, readRegressionHeadline, residualFigure, readResidualBins, readRowFeatures, readWorstPredictions, scatterFigure, worstTable } from './flows/regression';

const plan = { file: 'linear.csv', rows: 300, seed: 13, epochs: 40, batchSize: 32, hiddenUnits: 64, learningRate: 0.01, testShare: 0.2 };

/** Shown values have four significant digits: equal within that. */
function close(shown: number, actual: number): boolean {
  return Math.abs(shown - actual) <= Math.max(1e-3, Math.abs(actual) * 1e-3);
}

describe('regression flow: a numeric target, R² while training, scatter plot and worst predictions', { skip: skipWithoutBrowser() }, () => {
  let file: string;
  let rows: RegressionRow[];
  const scratch = useStudioWithScratch('regression', (dir) => {
    rows = regressionRows(plan.rows, plan.seed);
    file = writeFile(dir, plan.file, regressionCsv(rows));
  });
  const step = sequentialSteps(() => scratch.studio);
  const page = () => scratch.studio!.page;
  const model = `${plan.file} (run-1)`;
  let testCount = 0;

  step('open the CSV: the task is regression, with its reason, and the column report describes every column', 20_000, async () => {
    const summary = await openRegressionCsv(page(), file, 'y');
    assert.equal(summary['Examples'], '300');
    assert.equal(summary['Features'], '2');
    assert.equal(summary['Target'], 'y');
    assert.ok(!('Classes' in summary), 'no classes for a numeric target');
    const reason = ((await page().getByTestId('task-reason').textContent()) ?? '').trim();
    assert.match(reason, /\by\b/, `the reason names the target column: ${reason}`);
    assert.match(reason, /number|numeric|distinct/i, `and says why: ${reason}`);
    // No class bars for a number: the target's range instead.
    assert.equal(await page().getByRole('list', { name: 'Examples per class' }).count(), 0);
    const target = await readTable(section(page(), 'Target').getByRole('table'));
    const ys = rows.map((row) => row.y);
    const figures = Object.fromEntries(target.rows.map((row) => [row[0], numberOf(row[1])]));
    assert.ok(close(figures['Minimum'], Math.min(...ys)), `minimum ${figures['Minimum']} vs ${Math.min(...ys)}`);
    assert.ok(close(figures['Maximum'], Math.max(...ys)), `maximum ${figures['Maximum']} vs ${Math.max(...ys)}`);
    // The column report: one row per file column, with its type and no missing cells.
    const report = await readTable(page().getByRole('table', { name: 'Column report' }));
    assert.deepEqual(report.rows.map((row) => row[0]), [...regressionColumns]);
    const typeColumn = report.columns.indexOf('Type');
    const missingColumn = report.columns.indexOf('Missing');
    for (const row of report.rows) {
      assert.match(row[typeColumn], /numeric/i, `${row[0]} is numeric`);
      assert.equal(row[missingColumn], '0%', `${row[0]} has no missing cells`);
    }
  });

  step('a model for numbers: an MLP whose head is one linear unit, trained with a regression loss', 20_000, async () => {
    await setSplits(page(), { validation: 0.1, test: plan.testShare, normalisation: 'Z-score' });
    await choosePreset(page(), 'Small MLP');
    await waitModelFits(page(), 'flatten,dense:128:relu,dense:1');
    await removeLayer(page(), 1);
    await waitModelFits(page(), 'dense:128:relu,dense:1');
    const loss = section(page(), 'Training settings').getByRole('combobox', { name: 'Loss' });
    const losses = (await loss.getByRole('option').allTextContents()).map((text) => text.trim());
    assert.ok(losses.every((name) => !/cross-entropy/i.test(name)), `only regression losses: ${losses}`);
    assert.match((await loss.locator('option:checked').textContent()) ?? '', /squared error/i, 'mean squared error by default');
    await setTrainingSettings(page(), { optimizer: 'Adam', learningRate: plan.learningRate, batchSize: plan.batchSize, epochs: plan.epochs, device: 'cpu' });
  });

  step('train on the CPU: the charts show loss and R², the outcome R² and the test metrics; nothing says accuracy', 120_000, async () => {
    await startTraining(page());
    const outcome = await waitCompleted(page(), 100_000);
    assert.match(outcome, new RegExp(`after ${plan.epochs} epochs`));
    const testR2 = Number(/test R² (-?[\d.]+)/.exec(outcome)?.[1]);
    assert.ok(testR2 > 0.9, `a linear target is learnt: test R² ${testR2} (${outcome})`);
    assert.match(outcome, /validation MAE [\d.]+/);
    const figures = page().getByRole('main').getByLabel('Test set');
    const terms = (await figures.getByRole('term').allTextContents()).map((text) => text.trim());
    assert.deepEqual(terms.slice(0, 4), ['R²', 'MAE', 'RMSE', 'MAPE']);
    assert.equal(await page().getByRole('figure').filter({ hasText: 'R² (1 is a perfect fit)' }).locator('canvas').count(), 1, 'an R² chart');
    assert.equal(await page().getByRole('figure').filter({ hasText: /^Accuracy/ }).count(), 0, 'no accuracy chart');
    assert.doesNotMatch((await page().getByRole('main').textContent()) ?? '', /accuracy/i, 'the Train screen never says accuracy for a regression run');
  });

  step('the test set on Evaluate: R², MAE, RMSE and MAPE, no confusion matrix', 20_000, async () => {
    await page().getByRole('button', { name: 'See the evaluation →' }).click();
    const headline = await readRegressionHeadline(page());
    assert.equal(headline.title, 'Test set of run-1');
    assert.ok(headline.r2 > 0.9, `test R² ${headline.r2}`);
    assert.deepEqual(Object.keys(headline.figures), ['Examples', 'MAE', 'RMSE', 'MAPE']);
    testCount = numberOf(headline.figures['Examples']);
    assert.ok(testCount >= plan.rows * plan.testShare - 1 && testCount <= plan.rows * plan.testShare + 1, `a fifth of the rows: ${testCount}`);
    assert.ok(numberOf(headline.figures['MAE']) < 1, `MAE ${headline.figures['MAE']} against a target spread over about ±10`);
    assert.equal(await page().getByRole('table', { name: /^Confusion matrix/ }).count(), 0);
    assert.equal(await section(page(), 'Per class').count(), 0);
    // the run's own test set is drawn: scatter, residuals and worst rows, without evaluating again
    await scatterFigure(page(), 'y').locator('canvas').waitFor();
    const bins = await readResidualBins(page(), 'y');
    assert.equal(bins.reduce((sum, bin) => sum + bin.count, 0), testCount, 'the test set\'s residuals');
    assert.equal((await readWorstPredictions(page())).length, 10);
  });

  step('evaluate on the file: the scatter plot, the residual histogram and the worst predictions', 30_000, async () => {
    await evaluateWith(page(), model, new RegExp(`^${plan.file.replace('.', '\\.')} `));
    const headline = await eventually(async () => {
      const shown = await readRegressionHeadline(page());
      assert.equal(shown.title, `${model} on ${plan.file}`);
      return shown;
    });
    assert.equal(headline.figures['Examples'], '300');
    const scatter = scatterFigure(page(), 'y');
    await scatter.locator('canvas').waitFor();
    assert.match((await scatter.textContent()) ?? '', /300 examples/, 'every row is a point (at most 2,000 are drawn)');
    const box = await scatter.locator('canvas').boundingBox();
    assert.ok(box && box.width > 200 && box.height > 200, `the plot has room: ${JSON.stringify(box)}`);
    assert.ok(await canvasIsDrawn(scatter), 'the scatter plot is drawn');
    assert.ok(await canvasIsDrawn(residualFigure(page(), 'y')), 'the residual histogram is drawn');
    const bins = await readResidualBins(page(), 'y');
    assert.equal(bins.reduce((sum, bin) => sum + bin.count, 0), 300, 'the histogram counts every row once');
    const worst = await readWorstPredictions(page());
    assert.equal(worst.length, 10);
    for (const entry of worst) assert.ok(close(entry.error, entry.predicted - entry.truth) || Math.abs(entry.error - (entry.predicted - entry.truth)) < 0.01, `error = predicted − true: ${JSON.stringify(entry)}`);
    const sizes = worst.map((entry) => Math.abs(entry.error));
    assert.ok(sizes.every((size, index) => index === 0 || sizes[index - 1] >= size - 1e-3), `largest error first: ${sizes}`);
  });

  step('a worst prediction opens its row: its feature values, by click and by keyboard', 20_000, async () => {
    const worst = await readWorstPredictions(page());
    await worstTable(page()).locator('tbody tr').nth(0).click();
    const first = await eventually(async () => {
      const shown = await readRowFeatures(page());
      assert.equal(shown.title, `Example ${worst[0].example}`);
      assert.ok(shown.focused, 'the panel takes focus');
      return shown;
    });
    // The row in the file: example #n is the n-th data row (no row was dropped).
    const row = rows[numberOf(worst[0].example.replace('#', '')) - 1];
    assert.deepEqual(Object.keys(first.features), ['x1', 'x2']);
    assert.ok(close(first.features['x1'], row.x1) && close(first.features['x2'], row.x2), `the file's values ${JSON.stringify(row)}: ${JSON.stringify(first.features)}`);
    assert.ok(close(worst[0].truth, row.y), `its true y ${worst[0].truth} is the file's ${row.y}`);
    assert.ok(await page().getByRole('region', { name: /^Example #/ }).isVisible(), 'scrolled into view');

    const second = worstTable(page()).locator('tbody tr').nth(1).getByRole('button');
    await second.focus();
    await page().keyboard.press('Enter');
    await eventually(async () => {
      const shown = await readRowFeatures(page());
      assert.equal(shown.title, `Example ${worst[1].example}`);
      assert.ok(shown.focused, 'focus moves to the panel');
    });
    await page().getByRole('region', { name: /^Example #/ }).getByRole('button', { name: 'Close' }).click();
    assert.equal(await page().getByRole('region', { name: /^Example #/ }).count(), 0);
    assert.deepEqual(scratch.studio!.pageErrors, [], 'no errors in the page');
  });

  step('the Models screen shows the model\'s test R² where a classifier shows accuracy', 20_000, async () => {
    await goTo(page(), 'Models');
    const table = await readTable(page().getByRole('table', { name: 'Models of this session' }));
    const row = table.rows.find((cells) => cells[0] === model);
    assert.ok(row, `${model} in ${JSON.stringify(table.rows)}`);
    assert.equal(row[table.columns.indexOf('Predicts')], 'y');
    assert.match(row[table.columns.indexOf('Test accuracy / R²')], /^R² 0\.9\d\d$/);
  });

  /** New rows, without y: x1 and x2 inside the training range. */
  const newRows = regressionRows(30, plan.seed + 1).map(({ x1, x2 }) => ({ x1, x2 }));
  let predicted: number[] = [];

  step('save the model, open a CSV without the target column and predict it: values in y\'s own units', 40_000, async () => {
    const saved = await saveModel(page(), model, scratch.dir);
    assert.ok(fs.statSync(saved).size > 0, `the model file was saved: ${saved}`);
    const newFile = writeFile(scratch.dir, 'new points.csv', `x1,x2\n${newRows.map((row) => `${row.x1.toFixed(3)},${row.x2.toFixed(3)}`).join('\n')}\n`);
    await openUnlabeledCsv(page(), newFile);
    const summary = await readDatasetSummary(page());
    assert.equal(summary['Label'], 'none', JSON.stringify(summary));
    const preview = await predictFile(page(), model, /^new points\.csv /);
    assert.deepEqual(preview.columns, ['row', 'predicted_y'], 'a prediction column named after the target, no true values');
    assert.equal(preview.rows.length, 20, 'the first 20 rows shown');
    const title = (await page().getByTestId('predictions-title').textContent()) ?? '';
    assert.match(title, /30 rows, the first 20 shown/);
    const csv = await savePredictedCsv(page(), scratch.dir);
    assert.deepEqual(csv.columns, ['row', 'predicted_y']);
    assert.equal(csv.rows.length, newRows.length, 'every row predicted');
    assert.deepEqual(csv.rows.slice(0, 20), preview.rows, 'the preview is the CSV\'s first rows');
    predicted = csv.rows.map((row) => Number(row[1]));
    newRows.forEach((row, index) => {
      const expected = 3 * row.x1 - 2 * row.x2;
      assert.ok(Math.abs(predicted[index] - expected) < 0.5, `row ${index + 1}: ${predicted[index]} vs 3·x1 − 2·x2 = ${expected}`);
    });
  });

  step('the ONNX export gives the same values in onnxruntime', 30_000, async () => {
    assert.equal(predicted.length, newRows.length, 'the predictions of the step before');
    await goTo(page(), 'Models');
    const onnxFile = await exportOnnx(page(), model, scratch.dir);
    const session = await ort.InferenceSession.create(fs.readFileSync(onnxFile));
    try {
      const inputs = Float32Array.from(newRows.flatMap((row) => [row.x1, row.x2]));
      const output = await session.run({ [onnxInputName]: new ort.Tensor('float32', inputs, [newRows.length, 2]) });
      const values = output[onnxRegressionOutputName].data as Float32Array;
      assert.equal(values.length, newRows.length);
      values.forEach((value, index) => {
        // the CSV holds 7 significant digits
        assert.ok(Math.abs(value - predicted[index]) <= 1e-5 * Math.max(1, Math.abs(value)), `row ${index + 1}: ONNX ${value} vs predict ${predicted[index]}`);
      });
    } finally {
      await session.release();
    }
    assert.deepEqual(scratch.studio!.pageErrors, [], 'no errors in the page');
  });
});
