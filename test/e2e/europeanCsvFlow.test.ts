// A CSV as a German, French or Italian Excel saves it: a `sep=;` first line, ';' between fields, decimal
// commas (162,5), a byte order mark and CRLF line ends. The preview skips the sep line, guesses the comma and
// shows the columns as numbers; the file opens with them as numeric features; told "Point", the same columns
// read as text.
import { describe } from 'node:test';
import assert from 'node:assert/strict';
import { skipWithoutBrowser } from './support/browser';
import { random, writeFile } from './support/data';
import { sequentialSteps } from './support/steps';
import { useStudioWithScratch } from './support/studio';
import { readTable } from './support/ui';
import { chooseCsv, openChosenCsv, readDatasetSummary } from './flows/data';

const plan = { file: 'körper.csv', rows: 120, seed: 7 };

/** Height and weight with decimal commas, age as an integer, the class from the BMI. */
function europeanCsv(rows: number, seed: number): string {
  const next = random(seed);
  const lines = ['Größe;Gewicht;Alter;Klasse'];
  for (let i = 0; i < rows; i++) {
    const height = 150 + 40 * next();
    const weight = 45 + 50 * next();
    const bmi = weight / (height / 100) ** 2;
    const comma = (value: number) => value.toFixed(1).replace('.', ',');
    lines.push([comma(height), comma(weight), 18 + Math.floor(60 * next()), bmi > 25 ? 'schwer' : 'leicht'].join(';'));
  }
  return `\ufeffsep=;\r\n${lines.join('\r\n')}\r\n`;
}

describe('a European spreadsheet\'s CSV: a sep line, semicolons, decimal commas; lines that end with a delimiter', { skip: skipWithoutBrowser() }, () => {
  let file = '';
  let trailing = '';
  const scratch = useStudioWithScratch('european', (dir) => {
    file = writeFile(dir, plan.file, europeanCsv(plan.rows, plan.seed));
    trailing = writeFile(dir, 'trailing.csv', ['Breite;Höhe;Klasse;', ...Array.from({ length: 30 }, (_, i) => `${i % 7};${i % 4};${i % 2 ? 'a' : 'b'};`)].join('\n'));
  });
  const step = sequentialSteps(() => scratch.studio);
  const page = () => scratch.studio!.page;

  step('the preview: the sep line skipped, semicolon, decimal comma, the measurements typed as numbers', 20_000, async () => {
    await chooseCsv(page(), file);
    assert.equal(await page().getByRole('checkbox', { name: 'First row is the header' }).isChecked(), true);
    assert.equal(await page().getByRole('combobox', { name: 'Delimiter' }).inputValue(), ';');
    assert.equal(await page().getByRole('combobox', { name: 'Decimal mark' }).inputValue(), ',');
    const roles = await readTable(page().getByRole('table', { name: `Column roles of ${plan.file}` }));
    const type = roles.columns.indexOf('Type');
    assert.deepEqual(roles.rows.map((row) => row[type]), ['numeric', 'numeric', 'numeric', 'text']);
    // told "Point", the comma columns are text in the preview
    await page().getByRole('combobox', { name: 'Decimal mark' }).selectOption('.');
    const asPoints = await readTable(page().getByRole('table', { name: `Column roles of ${plan.file}` }));
    assert.deepEqual(asPoints.rows.map((row) => row[type]), ['text', 'text', 'numeric', 'text']);
    await page().getByRole('combobox', { name: 'Decimal mark' }).selectOption(',');
  });

  step('it opens with three numeric features, and the notes say how the numbers were read', 20_000, async () => {
    await openChosenCsv(page(), file, 'Klasse');
    const summary = await readDatasetSummary(page());
    assert.equal(summary['Examples'], String(plan.rows));
    assert.equal(summary['Features'], '3', 'Größe, Gewicht and Alter as numbers, not 200 one-hot categories');
    assert.equal(summary['Classes'], '2');
    const report = await readTable(page().getByRole('table', { name: 'Column report' }));
    const at = (name: string) => report.columns.indexOf(name);
    assert.deepEqual(report.rows.map((row) => [row[0], row[at('Type')]]), [['Größe', 'numeric'], ['Gewicht', 'numeric'], ['Alter', 'numeric'], ['Klasse', 'categorical (2 values)']]);
    await page().getByText(/numbers are written with a decimal comma/).first().waitFor();
    await page().getByText(/the first line, sep=;, names the delimiter/).first().waitFor();
  });

  step('lines that end with a delimiter: no empty last column in the preview, the label the last named column', 20_000, async () => {
    await chooseCsv(page(), trailing);
    const roles = await readTable(page().getByRole('table', { name: 'Column roles of trailing.csv' }));
    assert.deepEqual(roles.rows.map((row) => row[roles.columns.indexOf('Column')]), ['Breite', 'Höhe', 'Klasse']);
    assert.equal(await page().getByRole('combobox', { name: 'Label column' }).inputValue(), '2');
    await openChosenCsv(page(), trailing, 'Klasse');
    assert.equal((await readDatasetSummary(page()))['Features'], '2');
    await page().getByText(/every line ends with a delimiter/).first().waitFor();
    assert.deepEqual(scratch.studio!.pageErrors, [], 'no errors in the page');
  });
});
