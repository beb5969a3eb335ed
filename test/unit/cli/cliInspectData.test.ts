// `nnstudio inspect --data`: the column report of a messy CSV as a table and as JSON (docs/DATA.md).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { runCli, scratchDir } from './cliHarness';
import { textHistogram } from '../../../app/services/inspect';

function messyCsv(dir: string): string {
  const lines = ['customer_id,signup,age,city,price'];
  for (let i = 0; i < 60; i++) {
    lines.push(`${500 + i},2024-0${(i % 9) + 1}-1${i % 9},${i % 7 === 0 ? 'NA' : 20 + (i % 30)},${['Paris', 'Lyon', 'Nice'][i % 3]},${1000 + i * 17}.5`);
  }
  const file = path.join(dir, 'messy.csv');
  fs.writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

test('inspect --data prints the task with its reason and one line per column with a histogram', async () => {
  const dir = scratchDir('inspect-data');
  const file = messyCsv(dir);
  const table = await runCli(['inspect', '--data', file], dir);
  assert.equal(table.code, 0, table.stderr);
  const lines = table.stdout.split('\n');
  // age and city's 3 categories; the date is left out unless asked for (docs/DATA.md)
  assert.equal(lines[0], `${file}: 60 rows, 5 columns → 4 features`);
  assert.match(table.stdout, /^ {2}signup: a date column; its year, month, day and weekday can be used instead$/m);
  assert.equal(lines[1], 'task: regression (price: 60 distinct numbers, some with a fraction → regression)');
  assert.match(table.stdout, /^customer_id +id +left out +0 +60 +500 … 559/m);
  assert.match(table.stdout, /^age +numeric +1 feat\. +9 \(15\.0%\) +30 +20 … 49, mean [\d.]+ +[▁-█ ]{10}$/m);
  assert.match(table.stdout, /^ {2}customer_id: ID-like: all 60 values are distinct integers \(a run 500…559\)$/m);

  const json = await runCli(['inspect', '--data', file, '--json', '--task', 'regression', '--ignore', 'city', '--dates', 'parts'], dir);
  assert.equal(json.code, 0, json.stderr);
  const report = JSON.parse(json.stdout);
  assert.equal(report.task, 'regression');
  assert.deepEqual(report.targetNames, ['price']);
  assert.deepEqual(report.columns.map((column: { name: string; type: string; role: string }) => `${column.name}:${column.type}:${column.role}`),
    ['customer_id:id:left out', 'signup:date:feature', 'age:numeric:feature', 'city:categorical:left out', 'price:numeric:target']);
  assert.equal(report.columns[2].histogram.counts.length, 10);

  const both = await runCli(['inspect', '--data', file, '--preset', 'mlp'], dir);
  assert.notEqual(both.code, 0);
  assert.match(both.stderr, /give exactly one of --model, --preset, --layers or --data/);
});

test('text histograms scale to the largest bin', () => {
  assert.equal(textHistogram([0, 1, 2, 4, 8, 8, 0, 0, 0, 1]), ' ▁▂▄██   ▁');
});
