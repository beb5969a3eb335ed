// Tables as users bring them, through the real CLI: a numeric target trains as a regression with no flags
// and predicts in its own units; a messy file (missing markers, an ID and a date column) trains without
// cleaning and predicts rows with missing cells; eval --json has the documented fields (docs/TABLES.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import Papa from 'papaparse';
import { mulberry32 } from '../../../app/core/data/split';
import { errorLine, runCli, scratchDir } from './cliHarness';

/** price = 50 000 · rooms − 2 000 · age + 300 000 + noise: values in the hundreds of thousands. */
function writePrices(file: string, rows: number, options: { messy?: boolean; withTarget?: boolean; seed?: number } = {}): number[] {
  const random = mulberry32(options.seed ?? 1);
  const markers = ['', 'NA', '?', 'N/A'];
  const header = ['customer_id', 'sold', 'rooms', 'age', ...(options.withTarget === false ? [] : ['price'])];
  const lines = [header.join(',')];
  const prices: number[] = [];
  for (let i = 0; i < rows; i++) {
    const rooms = 1 + Math.floor(random() * 6);
    const age = Math.round(random() * 60);
    const price = 50_000 * rooms - 2_000 * age + 300_000 + (random() - 0.5) * 10_000;
    prices.push(price);
    const cell = (value: number) => (options.messy && random() < 0.1 ? markers[Math.floor(random() * markers.length)] : String(value));
    const date = `2024-${String(1 + (i % 12)).padStart(2, '0')}-${String(1 + (i % 28)).padStart(2, '0')}`;
    lines.push([String(100_000 + ((i * 7919) % 100_000)), date, cell(rooms), cell(age), ...(options.withTarget === false ? [] : [price.toFixed(2)])].join(','));
  }
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
  return prices;
}

test('a numeric target trains as a regression with no flags; eval and predict speak its units', { timeout: 180_000 }, async () => {
  const dir = scratchDir('cli-regression');
  writePrices(path.join(dir, 'prices.csv'), 400);
  const inspect = await runCli(['inspect', '--data', 'prices.csv'], dir);
  assert.equal(inspect.code, 0, inspect.stderr);
  assert.match(inspect.stdout, /task: regression \(price: 400 distinct numbers.* → regression\)/);
  const train = await runCli(['train', '--data', 'prices.csv', '--device', 'cpu', '--out', 'prices.safetensors', '--json', '--no-history'], dir);
  assert.equal(train.code, 0, train.stderr);
  const result = JSON.parse(train.stdout);
  assert.ok(result.test.r2 > 0.95, `a near-linear target is learnt: R² ${result.test.r2}`);
  assert.ok(result.test.mae > 500 && result.test.mae < 20_000, `MAE in the price's units: ${result.test.mae}`);
  assert.equal(typeof result.history.at(-1).validationR2, 'number');

  const evaluation = JSON.parse((await runCli(['eval', '--model', 'prices.safetensors', '--data', 'prices.csv', '--json'], dir)).stdout);
  assert.equal(evaluation.task, 'regression');
  for (const field of ['r2', 'mae', 'rmse', 'mape', 'loss', 'count']) assert.equal(typeof evaluation[field], 'number', field);
  assert.deepEqual(evaluation.perTarget.map((target: { name: string }) => target.name), ['price']);

  const truth = writePrices(path.join(dir, 'new.csv'), 20, { withTarget: false, seed: 9 });
  const predict = await runCli(['predict', '--model', 'prices.safetensors', '--data', 'new.csv'], dir);
  assert.equal(predict.code, 0, predict.stderr);
  const rows = Papa.parse<Record<string, string>>(predict.stdout.trim(), { header: true }).data;
  assert.deepEqual(Object.keys(rows[0]), ['row', 'predicted_price']);
  rows.forEach((row, i) => {
    const predicted = Number(row.predicted_price);
    assert.ok(Math.abs(predicted - truth[i]) < 0.1 * truth[i], `row ${i + 1}: ${predicted} against ${truth[i].toFixed(0)}`);
  });
});

test('a messy file trains without cleaning, and rows with missing cells are predicted', { timeout: 180_000 }, async () => {
  const dir = scratchDir('cli-messy');
  writePrices(path.join(dir, 'messy.csv'), 400, { messy: true });
  const inspect = JSON.parse((await runCli(['inspect', '--data', 'messy.csv', '--json'], dir)).stdout);
  const byName = Object.fromEntries(inspect.columns.map((column: { name: string }) => [column.name, column]));
  assert.equal(byName.customer_id.type, 'id');
  assert.equal(byName.sold.type, 'date');
  assert.ok(byName.rooms.missing > 0 && byName.rooms.missingShare < 0.2, `rooms has missing cells: ${byName.rooms.missing}`);

  const train = await runCli(['train', '--data', 'messy.csv', '--device', 'cpu', '--out', 'messy.safetensors', '--missing-indicator', '--json', '--no-history'], dir);
  assert.equal(train.code, 0, errorLine(train));
  assert.ok(JSON.parse(train.stdout).test.r2 > 0.7, 'a tenth of the cells missing still leaves most of the signal');

  fs.writeFileSync(path.join(dir, 'gaps.csv'), 'customer_id,sold,rooms,age\n5,2024-01-01,NA,30\n6,2024-02-02,3,?\n7,2024-03-03,,\n');
  const predict = await runCli(['predict', '--model', 'messy.safetensors', '--data', 'gaps.csv'], dir);
  assert.equal(predict.code, 0, errorLine(predict));
  const values = Papa.parse<Record<string, string>>(predict.stdout.trim(), { header: true }).data.map((row) => Number(row.predicted_price));
  assert.equal(values.length, 3);
  assert.ok(values.every((value) => Number.isFinite(value) && value > 100_000), `finite prices: ${values}`);
});

test('a numeric label forced to classification with thousands of classes is refused with the way out', async () => {
  const dir = scratchDir('cli-classes');
  writePrices(path.join(dir, 'prices.csv'), 300);
  const result = await runCli(['train', '--data', 'prices.csv', '--task', 'classification', '--device', 'cpu', '--out', 'x.safetensors'], dir);
  assert.equal(result.code, 1);
  assert.match(errorLine(result), /has 300 classes, more than 200 for a classifier; .*--task regression/);
  assert.ok(!fs.existsSync(path.join(dir, 'x.safetensors')));
});
