// The messy-CSV flow end to end, through `nnstudio serve` in headless Chromium: a file as people have them
// (10 % of the feature cells missing as '', NA, ?, N/A; an `id` column of unique integers; a date column),
// opened without cleaning: the column report shows the ID and the date left out with notes and every missing
// share; median + a missing indicator are chosen for one column on the Data screen and reach the model file;
// train on the CPU, evaluate, and predict a CSV whose rows have missing cells: every prediction is a number.
import { describe } from 'node:test';
import assert from 'node:assert/strict';
import { skipWithoutBrowser } from './support/browser';
import { gaussian, random, writeFile } from './support/data';
import { readSafetensorsHeader } from './support/safetensors';
import { sequentialSteps } from './support/steps';
import { useStudioWithScratch, waitConnected } from './support/studio';
import { eventually, goTo, readTable, section } from './support/ui';
import { openUnlabeledCsv, readDatasetSummary, setSplits } from './flows/data';
import { setTrainingSettings, waitModelFits } from './flows/model';
import { startTraining, waitCompleted } from './flows/train';
import { evaluateWith } from './flows/evaluate';
import { saveModel } from './flows/models';
import { predictFile, savePredictedCsv } from './flows/predict';
import { openRegressionCsv, readRegressionHeadline } from './flows/regression';

const plan = { file: 'messy.csv', rows: 240, seed: 31, epochs: 40, missingShare: 0.1 };
const markers = ['', 'NA', '?', 'N/A'];
const features = ['x1', 'x2', 'x3'] as const;

interface MessyRow {
  id: number;
  date: string;
  values: (number | undefined)[];
  y: number;
}

/** y = 3·x1 − 2·x2 + x3 + noise; each feature cell missing with probability 10 %; ids unique, not a run. */
function messyRows(count: number, seed: number, withMissing: boolean): MessyRow[] {
  const next = random(seed);
  return Array.from({ length: count }, (_, index) => {
    const values = features.map(() => Number((4 * next() - 2).toFixed(3)));
    const y = Number((3 * values[0] - 2 * values[1] + values[2] + 0.1 * gaussian(next)).toFixed(3));
    const day = 1 + Math.floor(next() * 28);
    const month = 1 + Math.floor(next() * 12);
    return {
      id: 100_000 + index * 7 + Math.floor(next() * 5),
      date: `2023-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`,
      values: values.map((value) => (withMissing && next() < plan.missingShare ? undefined : value)),
      y,
    };
  });
}

function messyCsv(rows: readonly MessyRow[], withTarget: boolean): string {
  let marker = 0;
  const cell = (value: number | undefined) => (value === undefined ? markers[marker++ % markers.length] : value.toFixed(3));
  const header = ['id', 'date', ...features, ...(withTarget ? ['y'] : [])].join(',');
  return `${[header, ...rows.map((row) => [row.id, row.date, ...row.values.map(cell), ...(withTarget ? [row.y.toFixed(3)] : [])].join(','))].join('\n')}\n`;
}

describe('messy-CSV flow: missing markers, an ID and a date column, imputation chosen in the UI', { skip: skipWithoutBrowser() }, () => {
  let file: string;
  let rows: MessyRow[];
  const scratch = useStudioWithScratch('messy', (dir) => {
    rows = messyRows(plan.rows, plan.seed, true);
    file = writeFile(dir, plan.file, messyCsv(rows, true));
  });
  const step = sequentialSteps(() => scratch.studio);
  const page = () => scratch.studio!.page;
  const model = `${plan.file} (run-1)`;

  step('open it as it is: the ID and the date are left out with notes, every column\'s missing share is shown', 20_000, async () => {
    const summary = await openRegressionCsv(page(), file, 'y');
    assert.equal(summary['Examples'], String(plan.rows), 'no row dropped: the target is never missing');
    assert.equal(summary['Features'], '3', 'x1, x2, x3: the ID and the date are not features');
    const report = await readTable(page().getByRole('table', { name: 'Column report' }));
    const at = (name: string) => report.columns.indexOf(name);
    const byName = Object.fromEntries(report.rows.map((row) => [row[0], row]));
    assert.deepEqual(report.rows.map((row) => row[0]), ['id', 'date', ...features, 'y']);
    assert.equal(byName['id'][at('Type')], 'ID-like');
    assert.equal(byName['id'][at('Use')], 'left out');
    assert.match(byName['id'][at('Notes')], /\S/, 'a note says why the ID is left out');
    assert.equal(byName['date'][at('Type')], 'date');
    assert.equal(byName['date'][at('Use')], 'left out');
    assert.match(byName['date'][at('Notes')], /\S/, 'a note says why the date is left out');
    features.forEach((name, index) => {
      const share = rows.filter((row) => row.values[index] === undefined).length / rows.length;
      assert.ok(share > 0.03, `the fixture has missing ${name} cells: ${share}`);
      const shown = Number(byName[name][at('Missing')].replace('%', '')) / 100;
      assert.ok(Math.abs(shown - share) < 0.001, `${name}: shown ${byName[name][at('Missing')]}, the file has ${share}`);
      assert.match(byName[name][at('Type')], /numeric/, `${name} stays numeric: its markers are missing values, not text`);
    });
    // the date choice is offered, left out by default
    assert.ok(await page().getByRole('radio', { name: 'Leave out' }).isChecked());
  });

  step('after a reload the dates choice still reads the file again (the server keeps it): parts, then left out', 30_000, async () => {
    await page().reload();
    await waitConnected(page());
    await eventually(async () => assert.equal((await readDatasetSummary(page()))['Features'], '3', 'the same dataset, selected'));
    await page().getByRole('radio', { name: 'Use year, month, day and weekday' }).check();
    await eventually(async () => assert.equal((await readDatasetSummary(page()))['Features'], '7', 'x1, x2, x3 and four date parts'), 15_000);
    await page().getByRole('radio', { name: 'Leave out' }).check();
    await eventually(async () => assert.equal((await readDatasetSummary(page()))['Features'], '3'), 15_000);
    assert.equal(await page().getByRole('group', { name: 'Open datasets' }).getByRole('button', { name: /^messy\.csv/ }).count(), 1, 'read again in place, not added');
  });

  step('choose median and a missing indicator for x2 in plain words', 10_000, async () => {
    const card = section(page(), 'Missing cells');
    const choices = await readTable(card.getByRole('table', { name: 'Missing cells' }));
    assert.deepEqual(choices.rows.map((row) => row[0]), ['All columns', ...features], 'one row per column with missing cells');
    const all = card.getByRole('combobox', { name: 'Fill missing cells with', exact: true });
    assert.equal(((await all.locator('option:checked').textContent()) ?? '').trim(), 'an estimate from the row\'s other columns', 'iterative by default');
    await card.getByRole('combobox', { name: 'Fill missing cells of x2 with' }).selectOption({ label: 'the median of the training rows' });
    await card.getByRole('checkbox', { name: 'Missing indicator for x2' }).check();
    assert.equal(await card.getByRole('checkbox', { name: 'Missing indicator for x1' }).isChecked(), false);
  });

  step('train on the CPU and evaluate on the file', 120_000, async () => {
    await setSplits(page(), { validation: 0.1, test: 0.2, normalisation: 'Z-score' });
    await goTo(page(), 'Model');
    await waitModelFits(page());
    await setTrainingSettings(page(), { epochs: plan.epochs, device: 'cpu' });
    await startTraining(page());
    const outcome = await waitCompleted(page(), 100_000);
    const testR2 = Number(/test R² (-?[\d.]+)/.exec(outcome)?.[1]);
    assert.ok(testR2 > 0.7, `learnt despite the missing cells: test R² ${testR2} (${outcome})`);
    await goTo(page(), 'Evaluate');
    await evaluateWith(page(), model, new RegExp(`^${plan.file.replace('.', '\\.')} `));
    const headline = await eventually(async () => {
      const shown = await readRegressionHeadline(page());
      assert.equal(shown.title, `${model} on ${plan.file}`);
      return shown;
    });
    assert.equal(headline.figures['Examples'], String(plan.rows));
    assert.ok(headline.r2 > 0.7, `R² on the file ${headline.r2}`);
  });

  step('the model file holds the choice: median for x2, estimates for the others, an indicator for x2 only', 20_000, async () => {
    await goTo(page(), 'Models');
    const saved = await saveModel(page(), model, scratch.dir);
    const metadata = JSON.parse(readSafetensorsHeader(saved).metadata.nnstudio) as { preprocessing?: { imputation?: { strategies: string[]; indicators: number[] } } };
    const imputation = metadata.preprocessing?.imputation;
    assert.ok(imputation, `imputation in the model file: ${JSON.stringify(metadata.preprocessing)}`);
    assert.deepEqual(imputation.strategies, ['iterative', 'median', 'iterative']);
    assert.deepEqual(imputation.indicators, [1], 'x2 (feature 1) has an indicator');
  });

  step('predict a CSV whose rows have missing cells and no target: every prediction is a number', 30_000, async () => {
    const newRows = messyRows(40, plan.seed + 1, true);
    assert.ok(newRows.some((row) => row.values.some((value) => value === undefined)), 'some new rows have missing cells');
    const newFile = writeFile(scratch.dir, 'messy new.csv', messyCsv(newRows, false));
    await openUnlabeledCsv(page(), newFile);
    const preview = await predictFile(page(), model, /^messy new\.csv /);
    assert.deepEqual(preview.columns, ['row', 'predicted_y']);
    const csv = await savePredictedCsv(page(), scratch.dir);
    assert.equal(csv.rows.length, newRows.length, 'every row predicted, none dropped for a missing cell');
    for (const [row, value] of csv.rows) assert.ok(Number.isFinite(Number(value)) && value !== '', `row ${row}: ${value}`);
    // rows with every feature present are predicted close to the formula
    const complete = newRows.flatMap((row, index) => (row.values.every((value) => value !== undefined) ? [index] : []));
    const errors = complete.map((index) => Math.abs(Number(csv.rows[index][1]) - newRows[index].y));
    const meanError = errors.reduce((sum, error) => sum + error, 0) / errors.length;
    assert.ok(meanError < 1, `mean error on complete rows ${meanError} (targets spread over about ±12)`);
    assert.deepEqual(scratch.studio!.pageErrors, [], 'no errors in the page');
  });
});
