// Files as spreadsheet programs save them. A German, French or Italian Excel: a `sep=;` first line, ';'
// between fields, decimal commas (162,5), a byte order mark and CRLF line ends: the preview skips the sep
// line, guesses the comma and shows the columns as numbers; the file opens with them as numeric features;
// told "Point", the same columns read as text. Lines that end with a delimiter have no empty last column.
// Excel's "Unicode Text" (UTF-16, tabs) previews and opens; a workbook saved under a .csv name is told to be
// saved as CSV instead of failing on its first row. numpy's savetxt header (`# x,y,label`) names the columns.
// A gzip-compressed CSV (.csv.gz, as scikit-learn ships its digits) previews and opens as the text inside it.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
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

describe('files as other programs save them: a sep line, semicolons and decimal commas, trailing delimiters, numpy, UTF-16, a workbook, gzip', { skip: skipWithoutBrowser() }, () => {
  let file = '';
  let trailing = '';
  let unicodeText = '';
  let workbook = '';
  let numpy = '';
  let gzipped = '';
  const scratch = useStudioWithScratch('european', (dir) => {
    numpy = writeFile(dir, 'savetxt.csv', `# x,y,label\n${Array.from({ length: 30 }, (_, i) => `${((i * 0.37) % 1).toFixed(4)},${((i * 0.61) % 1).toFixed(4)},${i % 2}.0000`).join('\n')}\n`);
    // Excel's "Unicode Text": UTF-16 little-endian with its byte order mark, tab-separated
    const tabbed = ['Breite\tHöhe\tKlasse', ...Array.from({ length: 30 }, (_, i) => `${i % 7}\t${i % 4}\t${i % 2 ? 'ja' : 'nein'}`)].join('\r\n');
    unicodeText = path.join(dir, 'unicode.txt');
    fs.writeFileSync(unicodeText, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(tabbed, 'utf16le')]));
    workbook = path.join(dir, 'umsatz.csv');
    fs.writeFileSync(workbook, Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x06, 0x00, 0x08, 0x00]));
    file = writeFile(dir, plan.file, europeanCsv(plan.rows, plan.seed));
    gzipped = path.join(dir, 'körper.csv.gz');
    fs.writeFileSync(gzipped, zlib.gzipSync(europeanCsv(plan.rows, plan.seed + 1)));
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
    await page().getByText(/the first line \(sep=;\) names the delimiter/).first().waitFor();
  });

  step('lines that end with a delimiter: no empty last column in the preview, the label the last named column', 20_000, async () => {
    await chooseCsv(page(), trailing);
    const roles = await readTable(page().getByRole('table', { name: 'Column roles of trailing.csv' }));
    assert.deepEqual(roles.rows.map((row) => row[roles.columns.indexOf('Column')]), ['Breite', 'Höhe', 'Klasse']);
    assert.equal(await page().getByRole('combobox', { name: 'Label column' }).inputValue(), '2');
    await openChosenCsv(page(), trailing, 'Klasse');
    assert.equal((await readDatasetSummary(page()))['Features'], '2');
    await page().getByText(/every line ends with a delimiter/).first().waitFor();
  });

  step('numpy\'s savetxt: the `# x,y,label` line names the columns in the preview and on opening', 20_000, async () => {
    await chooseCsv(page(), numpy);
    const roles = await readTable(page().getByRole('table', { name: 'Column roles of savetxt.csv' }));
    assert.deepEqual(roles.rows.map((row) => row[roles.columns.indexOf('Column')]), ['x', 'y', 'label']);
    assert.equal(await page().getByRole('checkbox', { name: 'First row is the header' }).isChecked(), true);
    await openChosenCsv(page(), numpy, 'label');
    const summary = await readDatasetSummary(page());
    assert.equal(summary['Examples'], '30');
    assert.equal(summary['Features'], '2');
  });

  step('a gzip-compressed CSV (.csv.gz): the preview shows the text inside it, and it opens', 20_000, async () => {
    await chooseCsv(page(), gzipped);
    const roles = await readTable(page().getByRole('table', { name: 'Column roles of körper.csv.gz' }));
    assert.deepEqual(roles.rows.map((row) => row[roles.columns.indexOf('Column')]), ['Größe', 'Gewicht', 'Alter', 'Klasse']);
    assert.equal(await page().getByRole('combobox', { name: 'Delimiter' }).inputValue(), ';');
    await openChosenCsv(page(), gzipped, 'Klasse');
    const summary = await readDatasetSummary(page());
    assert.deepEqual([summary['Examples'], summary['Features']], [String(plan.rows), '3']);
  });

  step('Excel\'s Unicode Text (UTF-16, tabs) previews and opens; a workbook saved as .csv is told what to do', 20_000, async () => {
    await chooseCsv(page(), unicodeText);
    const roles = await readTable(page().getByRole('table', { name: 'Column roles of unicode.txt' }));
    assert.deepEqual(roles.rows.map((row) => row[roles.columns.indexOf('Column')]), ['Breite', 'Höhe', 'Klasse']);
    await openChosenCsv(page(), unicodeText, 'Klasse');
    assert.equal((await readDatasetSummary(page()))['Examples'], '30');
    const chooser = page().waitForEvent('filechooser');
    await page().getByRole('button', { name: 'Choose a file…' }).click();
    await (await chooser).setFiles(workbook);
    await page().getByText('umsatz.csv: the file is a ZIP archive, such as an Excel (.xlsx) or LibreOffice (.ods) workbook, not a CSV: save the sheet as CSV (in Excel: Save As, "CSV UTF-8")').waitFor();
    assert.equal(await page().getByRole('table', { name: 'Column roles of umsatz.csv' }).count(), 0, 'no column table for a workbook');
    assert.deepEqual(scratch.studio!.pageErrors, [], 'no errors in the page');
  });
});
