// `--class-names` end to end: an IDX pair trained with names (and its test pair) gives a model whose files,
// evaluation and inspection show the names; another IDX file is read by its label values; CSVs refuse the flag.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { encodeIdx } from '../../../app/core/data/idx';
import { loadModel } from '../../../app/core/model/modelFile';
import { errorLine, repoRoot, runCli, scratchDir } from './cliHarness';

/** `count` 4x4 images whose class k lights row k: easy to learn in a few epochs. */
function writeIdxPair(dir: string, prefix: string, count: number): void {
  fs.mkdirSync(dir, { recursive: true });
  const labels = Uint8Array.from({ length: count }, (_, i) => i % 3);
  const pixels = new Uint8Array(count * 16);
  labels.forEach((label, n) => pixels.fill(255, n * 16 + label * 4, n * 16 + label * 4 + 4));
  fs.writeFileSync(path.join(dir, `${prefix}-images-idx3-ubyte`), encodeIdx([count, 4, 4], pixels));
  fs.writeFileSync(path.join(dir, `${prefix}-labels-idx1-ubyte`), encodeIdx([count], labels));
}

test('--class-names names IDX classes in the model, its evaluation and its inspection', async () => {
  const dir = scratchDir('classnames');
  writeIdxPair(path.join(dir, 'train'), 'train', 60);
  writeIdxPair(path.join(dir, 'test'), 't10k', 12);
  const trained = await runCli(['train', '--data', 'train/train-images-idx3-ubyte', '--class-names', 'top, middle,bottom',
    '--test-data', 'test/t10k-images-idx3-ubyte', '--layers', 'dense:3', '--lr', '0.1', '--epochs', '40', '--device', 'cpu', '--json', '--no-history', '--out', 'rows.safetensors'], dir);
  assert.equal(trained.code, 0, trained.stderr);
  const result = JSON.parse(trained.stdout);
  assert.deepEqual(result.test.labels, ['top', 'middle', 'bottom']);

  const model = await loadModel(path.join(dir, 'rows.safetensors'));
  assert.deepEqual(model.labels, ['top', 'middle', 'bottom']);
  assert.deepEqual((model.preprocessing as { labelValues?: string[] }).labelValues, ['0', '1', '2']);

  // Another IDX file of the same kind: read by its label values 0..2, reported by name.
  const evaluation = await runCli(['eval', '--model', 'rows.safetensors', '--data', 'test/t10k-images-idx3-ubyte', '--json'], dir);
  assert.equal(evaluation.code, 0, evaluation.stderr);
  const report = JSON.parse(evaluation.stdout);
  assert.deepEqual(report.labels, ['top', 'middle', 'bottom']);
  assert.equal(report.accuracy, 1);

  const inspect = await runCli(['inspect', '--model', 'rows.safetensors'], dir);
  assert.match(inspect.stdout, /classes: top, middle, bottom/);
});

test('--class-names is refused for a CSV and when the count is wrong', async () => {
  const dir = scratchDir('classnames-bad');
  writeIdxPair(dir, 'train', 9);
  const iris = path.join(repoRoot, 'resources', 'samples', 'iris.csv');
  const csv = await runCli(['train', '--data', iris, '--class-names', 'a,b,c', '--device', 'cpu', '--no-history'], dir);
  assert.notEqual(csv.code, 0);
  assert.match(errorLine(csv), /--class-names applies to IDX files, mnist and image folders; a CSV's classes are the values of its label column/);
  const wrong = await runCli(['train', '--data', 'train-images-idx3-ubyte', '--class-names', 'a,b', '--device', 'cpu', '--no-history'], dir);
  assert.notEqual(wrong.code, 0);
  assert.match(errorLine(wrong), /3 class names needed \(one per class\), got 2/);
});
