// The CLI end to end: train → eval → predict → inspect on CSV and MNIST data, the course tool's flags,
// and a model trained on the built-in MNIST evaluating a Kaggle-style pixel CSV identically.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import Papa from 'papaparse';
import { repoRoot, runCli, scratchDir, writeKagglePixelCsv } from './cliHarness';

const iris = path.join(repoRoot, 'resources', 'samples', 'iris.csv');
const wine = path.join(repoRoot, 'resources', 'samples', 'wine.csv');

test('train, eval, predict and inspect on a CSV with string labels', async () => {
  const dir = scratchDir('iris');
  const train = await runCli(['train', '--data', iris, '--epochs', '200', '--device', 'cpu', '--out', 'iris.safetensors', '--json'], dir);
  assert.equal(train.code, 0, train.stderr);
  const trained = JSON.parse(train.stdout);
  assert.equal(trained.status, 'completed');
  assert.ok(trained.test.accuracy >= 0.85, `iris test accuracy ${trained.test.accuracy}`);
  assert.deepEqual(trained.test.labels, ['setosa', 'versicolor', 'virginica']);
  assert.ok(fs.statSync(path.join(dir, 'iris.safetensors')).size > 100);

  const evaluation = await runCli(['eval', '--model', 'iris.safetensors', '--data', iris, '--json'], dir);
  assert.equal(evaluation.code, 0, evaluation.stderr);
  const report = JSON.parse(evaluation.stdout);
  for (const key of ['accuracy', 'macro', 'weighted', 'perClass', 'confusion', 'labels']) assert.ok(key in report, key);
  const total = report.confusion.flat().reduce((a: number, b: number) => a + b, 0);
  assert.equal(total, 150);
  assert.ok(report.accuracy > 0.85);

  const predict = await runCli(['predict', '--model', 'iris.safetensors', '--data', iris, '--out', 'predictions.csv'], dir);
  assert.equal(predict.code, 0, predict.stderr);
  const rows = Papa.parse<Record<string, string>>(fs.readFileSync(path.join(dir, 'predictions.csv'), 'utf8'), { header: true, skipEmptyLines: true });
  assert.equal(rows.data.length, 150);
  assert.deepEqual(rows.meta.fields, ['row', 'predicted', 'label', 'p_setosa', 'p_versicolor', 'p_virginica']);
  for (const row of rows.data) {
    const sum = Number(row.p_setosa) + Number(row.p_versicolor) + Number(row.p_virginica);
    assert.ok(Math.abs(sum - 1) < 1e-4, `probabilities sum to ${sum}`);
  }

  // Prediction input without the label column.
  const unlabeled = Papa.parse<string[]>(fs.readFileSync(iris, 'utf8'), { skipEmptyLines: true }).data.map((row) => row.slice(0, 4));
  fs.writeFileSync(path.join(dir, 'unlabeled.csv'), Papa.unparse(unlabeled));
  const predictUnlabeled = await runCli(['predict', '--model', 'iris.safetensors', '--data', 'unlabeled.csv'], dir);
  assert.equal(predictUnlabeled.code, 0, predictUnlabeled.stderr);
  const unlabeledRows = Papa.parse<string[]>(predictUnlabeled.stdout, { skipEmptyLines: true }).data;
  assert.deepEqual(unlabeledRows[0], ['row', 'predicted', 'p_setosa', 'p_versicolor', 'p_virginica']);
  assert.equal(unlabeledRows.length, 151);

  const inspect = await runCli(['inspect', '--model', 'iris.safetensors'], dir);
  assert.equal(inspect.code, 0, inspect.stderr);
  assert.match(inspect.stdout, /dense #1/);
  assert.match(inspect.stdout, /total parameters: 803/); // 4*100+100 + 100*3+3
  assert.match(inspect.stdout, /classes: setosa, versicolor, virginica/);
});

test('label in the first column, chosen by index, with a custom MLP', async () => {
  const dir = scratchDir('wine');
  const result = await runCli(['train', '--data', wine, '--label-column', '0', '--layers', 'dense:32:relu,dense:3', '--epochs', '200',
    '--device', 'cpu', '--json', '--out', 'wine.safetensors'], dir);
  assert.equal(result.code, 0, result.stderr);
  const outcome = JSON.parse(result.stdout);
  assert.deepEqual(outcome.test.labels, ['1', '2', '3']);
  assert.ok(outcome.test.accuracy >= 0.85, `wine accuracy ${outcome.test.accuracy}`);
});

test('MNIST: a model trained on the built-in data evaluates a Kaggle-style pixel CSV identically', async () => {
  const dir = scratchDir('mnist');
  const train = await runCli(['train', '--data', 'mnist', '--limit', '6000', '--preset', 'mlp', '--epochs', '2', '--device', 'cpu',
    '--out', 'm.safetensors', '--json'], dir);
  assert.equal(train.code, 0, train.stderr);
  const full = await runCli(['eval', '--model', 'm.safetensors', '--data', 'mnist', '--json'], dir);
  assert.equal(full.code, 0, full.stderr);
  const report = JSON.parse(full.stdout);
  assert.equal(report.confusion.length, 10);
  assert.ok(report.confusion.every((row: number[]) => row.length === 10));
  assert.equal(report.confusion.flat().reduce((a: number, b: number) => a + b, 0), 10000);
  assert.ok(report.accuracy > 0.8, `accuracy ${report.accuracy}`);

  writeKagglePixelCsv(path.join(dir, 'kaggle.csv'), 500);
  const fromCsv = JSON.parse((await runCli(['eval', '--model', 'm.safetensors', '--data', 'kaggle.csv', '--json'], dir)).stdout);
  const fromIdx = JSON.parse((await runCli(['eval', '--model', 'm.safetensors', '--data', 'mnist', '--limit', '500', '--json'], dir)).stdout);
  assert.equal(fromCsv.count, 500);
  assert.equal(fromCsv.accuracy, fromIdx.accuracy);
  assert.deepEqual(fromCsv.confusion, fromIdx.confusion);
});

test('the C course tool\'s flags train and test its sigmoid MLP', async () => {
  const dir = scratchDir('course');
  const rows: string[] = [];
  let seed = 7;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  for (let i = 0; i < 200; i++) {
    const features = Array.from({ length: 30 }, () => random());
    const label = features[0] + features[1] > 1 ? 1 : 0;
    rows.push([...features.map((value) => value.toFixed(4)), label].join(','));
  }
  fs.writeFileSync(path.join(dir, 'f.csv'), `${rows.join('\n')}\n`);
  const train = await runCli(['--train', '--layers', '30,60,10,1', '--dataset', 'f.csv', '--batch_number', '10', '--learning_rate', '0.5',
    '--epochs', '30', '--model', 'm'], dir);
  assert.equal(train.code, 0, train.stderr);
  assert.ok(fs.existsSync(path.join(dir, 'm')));
  const inspect = await runCli(['inspect', '--model', 'm', '--json'], dir);
  const table = JSON.parse(inspect.stdout);
  assert.deepEqual(table.spec.layers.map((layer: { units: number; activation: string }) => [layer.units, layer.activation]),
    [[60, 'sigmoid'], [10, 'sigmoid'], [1, 'sigmoid']]);
  assert.equal(table.spec.loss, 'mse');
  assert.equal(table.spec.optimizer.kind, 'sgd');
  assert.equal(table.spec.optimizer.lr, 0.5);
  const testRun = await runCli(['--test', '--dataset', 'f.csv', '--model', 'm'], dir);
  assert.equal(testRun.code, 0, testRun.stderr);
  assert.match(testRun.stdout, /accuracy \d+\.\d+ %/);
});

test('inspect prints a layer table for a preset and devices lists the CPU', async () => {
  const dir = scratchDir('inspect');
  const inspect = await runCli(['inspect', '--preset', 'seed000'], dir);
  assert.equal(inspect.code, 0, inspect.stderr);
  assert.match(inspect.stdout, /dense #1\s.*128\s+25,216/);
  assert.match(inspect.stdout, /4x28x28/);
  const devices = await runCli(['devices', '--json'], dir);
  assert.equal(devices.code, 0, devices.stderr);
  const list = JSON.parse(devices.stdout);
  assert.equal(list[0].kind, 'cpu');
  assert.ok(list[0].threads >= 1);
});
