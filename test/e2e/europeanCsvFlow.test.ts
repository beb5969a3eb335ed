// A CSV as a German, French or Italian spreadsheet saves it: ';' between fields, decimal commas (162,5), a
// byte order mark and CRLF line ends. The preview guesses the comma, shows the columns as numbers, and the
// file opens with them as numeric features; told "Point", the same columns read as text.
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
  return `\ufeff${lines.join('\r\n')}\r\n`;
}

describe('a European spreadsheet\'s CSV: semicolons and decimal commas', { skip: skipWithoutBrowser() }, () => {
  let file = '';
  const scratch = useStudioWithScratch('european', (dir) => {
    file = writeFile(dir, plan.file, europeanCsv(plan.rows, plan.seed));
  });
  const step = sequentialSteps(() => scratch.studio);
  const page = () => scratch.studio!.page;

  step('the preview: semicolon, decimal comma, the measurements typed as numbers', 20_000, async () => {
    await chooseCsv(page(), file);
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
    assert.deepEqual(scratch.studio!.pageErrors, [], 'no errors in the page');
  });
});
