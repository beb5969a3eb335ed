// `nnstudio runs` end to end: train records runs (unless --no-history), then list, show, compare and delete
// them; unreadable run files are named and skipped. Each test has its own NNSTUDIO_DATA_DIR.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { errorLine, hasStackTrace, repoRoot, runCli, scratchDir } from './cliHarness';

const iris = path.join(repoRoot, 'resources', 'samples', 'iris.csv');

async function train(dir: string, env: NodeJS.ProcessEnv, extra: string[]): Promise<{ runId: string | null; status: string }> {
  const result = await runCli(['train', '--data', iris, '--epochs', '5', '--device', 'cpu', '--threads', '1', '--json', ...extra], dir, 60_000, env);
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout);
}

test('train records runs; runs lists, shows, compares and deletes them', async () => {
  const dir = scratchDir('runs');
  const env = { NNSTUDIO_DATA_DIR: path.join(dir, 'data') };
  const first = await train(dir, env, ['--out', 'a.safetensors', '--lr', '0.01']);
  const second = await train(dir, env, ['--out', 'b.safetensors', '--lr', '0.001', '--epochs', '3']);
  assert.match(first.runId ?? '', /^\d{8}-\d{6}-[0-9a-f]{8}$/);
  assert.notEqual(first.runId, second.runId);
  const runsDir = path.join(dir, 'data', 'runs');
  assert.ok(fs.existsSync(path.join(runsDir, `${first.runId}.json`)));
  assert.ok(fs.existsSync(path.join(runsDir, `${first.runId}.safetensors`)), 'the model is kept beside the run');

  const listed = await runCli(['runs', '--json'], dir, 30_000, env);
  assert.equal(listed.code, 0, listed.stderr);
  const listing = JSON.parse(listed.stdout);
  assert.equal(listing.directory, runsDir);
  assert.deepEqual(listing.runs.map((run: { id: string }) => run.id), [second.runId, first.runId], 'newest first');
  assert.equal(listing.runs[1].epochs, 5);
  assert.equal(listing.runs[1].data, 'iris.csv');
  assert.equal(listing.runs[1].model, 'dense:100:relu,dense:3');
  assert.ok(listing.runs[1].testAccuracy > 0.3);
  assert.deepEqual(listing.problems, []);

  const table = await runCli(['runs'], dir, 30_000, env);
  assert.equal(table.code, 0, table.stderr);
  const lines = table.stdout.trim().split('\n');
  assert.match(lines[0], /^id\s+date\s+data\s+model\s+epochs\s+test acc\s+status$/);
  assert.equal(lines.length, 3);
  assert.match(lines[2], new RegExp(`^${first.runId}\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d\\s+iris\\.csv\\s+dense:100:relu,dense:3\\s+5\\s+\\d+\\.\\d\\d %\\s+completed$`));

  const shown = await runCli(['runs', 'show', first.runId!], dir, 30_000, env);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, new RegExp(`^run ${first.runId}: iris\\.csv, `));
  assert.match(shown.stdout, /training {4}5 of 5 epochs, batch \d+, adam lr 0\.01, seed 0, normalisation zscore/);
  assert.match(shown.stdout, /total parameters: 803/);
  assert.match(shown.stdout, /epoch\s+train loss\s+train acc\s+val loss\s+val acc\s+seconds/);
  assert.match(shown.stdout, /confusion matrix/);
  const shownJson = JSON.parse((await runCli(['runs', 'show', first.runId!, '--json'], dir, 30_000, env)).stdout);
  assert.equal(shownJson.modelPath, path.join(runsDir, `${first.runId}.safetensors`));
  assert.equal(shownJson.history.length, 5);
  assert.equal(shownJson.test.report.confusion.flat().reduce((a: number, b: number) => a + b, 0), 30);

  // The saved model in the history is the one train wrote to --out.
  assert.deepEqual(fs.readFileSync(shownJson.modelPath), fs.readFileSync(path.join(dir, 'a.safetensors')));

  const compared = await runCli(['runs', 'compare', first.runId!, second.runId!], dir, 30_000, env);
  assert.equal(compared.code, 0, compared.stderr);
  assert.match(compared.stdout, /metric\s+first\s+second\s+second − first/);
  assert.match(compared.stdout, /test accuracy\s+\d+\.\d\d %\s+\d+\.\d\d %/);
  assert.match(compared.stdout, /epochs\s+5\s+3\s+−2/);
  assert.match(compared.stdout, /learning rate\s+0\.01\s+0\.001\s+≠/);
  assert.match(compared.stdout, /epoch\s+1: train loss\s+1: val loss\s+1: val acc\s+2: train loss/);
  assert.match(compared.stdout, /\n\s+5\s+\d\.\d{4}\s+\d\.\d{4}\s+\d+\.\d\d %\s*\n/, 'epoch 5 has only the first run');
  const comparedJson = JSON.parse((await runCli(['runs', 'compare', first.runId!, second.runId!, '--json'], dir, 30_000, env)).stdout);
  const accuracy = comparedJson.metrics.find((row: { name: string }) => row.name === 'test accuracy');
  assert.ok(Math.abs(accuracy.difference - (accuracy.second - accuracy.first)) < 1e-12);
  assert.equal(comparedJson.history.length, 5);

  const deleted = await runCli(['runs', 'delete', first.runId!], dir, 30_000, env);
  assert.equal(deleted.code, 0, deleted.stderr);
  assert.equal(deleted.stdout.trim(), `deleted run ${first.runId} and its model file`);
  assert.equal(fs.existsSync(path.join(runsDir, `${first.runId}.safetensors`)), false);
  const after = JSON.parse((await runCli(['runs', '--json'], dir, 30_000, env)).stdout);
  assert.deepEqual(after.runs.map((run: { id: string }) => run.id), [second.runId]);
});

test('--no-history records nothing; an empty history says where it looked', async () => {
  const dir = scratchDir('runs-off');
  const env = { NNSTUDIO_DATA_DIR: path.join(dir, 'data') };
  const trained = await train(dir, env, ['--out', 'm.safetensors', '--no-history']);
  assert.equal(trained.runId, null);
  assert.equal(fs.existsSync(path.join(dir, 'data', 'runs')), false);
  const listed = await runCli(['runs'], dir, 30_000, env);
  assert.equal(listed.code, 0);
  assert.equal(listed.stdout.trim(), `no saved runs in ${path.join(dir, 'data', 'runs')} (nnstudio train records one)`);
});

test('bad run files are skipped with their names; bad ids end with one line', async () => {
  const dir = scratchDir('runs-bad');
  const env = { NNSTUDIO_DATA_DIR: path.join(dir, 'data') };
  const trained = await train(dir, env, ['--out', 'm.safetensors']);
  const runsDir = path.join(dir, 'data', 'runs');
  fs.writeFileSync(path.join(runsDir, 'corrupt.json'), 'nonsense');
  const record = JSON.parse(fs.readFileSync(path.join(runsDir, `${trained.runId}.json`), 'utf8'));
  fs.writeFileSync(path.join(runsDir, 'later.json'), JSON.stringify({ ...record, id: 'later', formatVersion: 2 }));

  const listed = await runCli(['runs'], dir, 30_000, env);
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(listed.stdout, new RegExp(trained.runId!));
  assert.match(listed.stderr, /^skipped corrupt\.json: not valid JSON/m);
  assert.match(listed.stderr, /^skipped later\.json: format version 2 is not supported: this NN Studio reads version 1 \(written by a newer NN Studio\)$/m);
  const json = JSON.parse((await runCli(['runs', '--json'], dir, 30_000, env)).stdout);
  assert.deepEqual(json.problems.map((problem: { file: string }) => problem.file), ['corrupt.json', 'later.json']);

  for (const [args, message] of [
    [['runs', 'show', 'nope'], /^nnstudio: no saved run "nope" in .* \(nnstudio runs lists them\)$/],
    [['runs', 'show', '../../etc/passwd'], /^nnstudio: "\.\.\/\.\.\/etc\/passwd" is not a run id/],
    [['runs', 'show', 'later'], /^nnstudio: later\.json: format version 2 is not supported/],
    [['runs', 'compare', trained.runId!, 'nope'], /^nnstudio: no saved run "nope"/],
    [['runs', 'delete', 'nope'], /^nnstudio: no saved run "nope"/],
  ] as const) {
    const result = await runCli([...args], dir, 30_000, env);
    assert.equal(result.code, 1, args.join(' '));
    assert.match(errorLine(result), message);
    assert.equal(hasStackTrace(result.stderr), false);
  }
});
