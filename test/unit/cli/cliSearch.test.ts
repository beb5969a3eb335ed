// `nnstudio search` as a user runs it: a leaderboard, the winner tested and saved, the trials in the run
// history; bad settings refused in one line.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { errorLine, hasStackTrace, repoRoot, runCli, scratchDir } from './cliHarness';

const iris = path.join(repoRoot, 'resources', 'samples', 'iris.csv');
const small = ['--trials', '4', '--min-epochs', '2', '--max-epochs', '4', '--eta', '2', '--device', 'cpu', '--threads', '1'];

test('a search on iris prints its leaderboard and the winner\'s test metrics, and saves the winner', async () => {
  const dir = scratchDir('search');
  const text = await runCli(['search', '--data', iris, ...small, '--out', 'best.safetensors'], dir);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stderr, /searching on .*iris\.csv: 150 rows before the splits; 4 x 2 epochs, then 2 x 4 epochs/);
  assert.match(text.stderr, /\[6\/6\] trial \d, 4 epochs: /);
  assert.match(text.stdout, /leaderboard \(each trial's best run, the best validation score first\):\n\s+rank\s+trial\s+epochs\s+val acc/);
  assert.match(text.stdout, /the best trial \(\d\) on the test set \(30 examples\), evaluated once:\naccuracy /);
  assert.ok(fs.existsSync(path.join(dir, 'best.safetensors')), 'the best model is saved');

  const json = await runCli(['search', '--data', iris, ...small, '--out', 'best2.safetensors', '--json', '--no-history'], dir);
  assert.equal(json.code, 0, json.stderr);
  assert.equal(json.stderr, '', 'no progress with --json');
  const result = JSON.parse(json.stdout);
  assert.deepEqual(result.rungs, [{ epochs: 2, trials: 4 }, { epochs: 4, trials: 2 }]);
  assert.equal(result.leaderboard.length, 4);
  assert.equal(result.runs.length, 6);
  assert.deepEqual(result.best, result.leaderboard[0]);
  const scores = result.leaderboard.map((run: { score: number }) => run.score);
  assert.deepEqual(scores, [...scores].sort((a: number, b: number) => b - a), 'the best score first');
  assert.ok(result.test.accuracy > 0.5, `test accuracy ${result.test.accuracy}`);
  // the same seed, the same search: the text run's winner is the JSON run's
  assert.match(text.stdout, new RegExp(`the best trial \\(${result.best.config.trial}\\)`));

  const runs = await runCli(['runs', '--json'], dir);
  const recorded = JSON.parse(runs.stdout);
  assert.ok((recorded.runs ?? recorded).length >= 6, 'the first search\'s six trial runs are in the history');
});

test('--budget stops starting trials after its seconds, and says so', async () => {
  const dir = scratchDir('search-budget');
  const result = await runCli(['search', '--data', iris, ...small, '--budget', '0.001', '--out', 'best.safetensors', '--no-history'], dir);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /^search stopped by its time budget in [\d.]+ s: 1 trial run\n/);
  assert.ok(fs.existsSync(path.join(dir, 'best.safetensors')));
});

test('--parallel trains trials side by side, says so, and picks the winner one at a time would', async () => {
  const dir = scratchDir('search-parallel');
  const text = await runCli(['search', '--data', iris, ...small, '--parallel', '2', '--no-history', '--out', 'two.safetensors'], dir);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stderr, /4 x 2 epochs, then 2 x 4 epochs; 2 trials at a time\n/);
  const [one, two] = await Promise.all(['1', '2'].map((parallel) => runCli(['search', '--data', iris, ...small, '--parallel', parallel,
    '--json', '--no-history', '--out', `best${parallel}.safetensors`], dir)));
  const [a, b] = [one, two].map((result) => JSON.parse(result.stdout));
  const ranks = (search: { leaderboard: Array<{ seconds?: number }> }) => search.leaderboard.map(({ seconds, ...run }) => run);
  assert.deepEqual(ranks(b), ranks(a), 'the same leaderboard but for the seconds each run took');
  assert.deepEqual(b.test, a.test, 'the same winner, the same test metrics');
});

test('bad search settings get one line naming the setting', async () => {
  const dir = scratchDir('search-bad');
  const cases: Array<[string[], RegExp]> = [
    [['--space', '{"depth":[1,'], /--space takes JSON/],
    [['--space', '{"lr":[0.1,0.01]}'], /--space: lr: a range is \[low, high\] with low <= high/],
    [['--space', '{"schedules":["warmup"]}'], /--space: schedules\.0: /],
    [['--min-epochs', '5', '--max-epochs', '2'], /0 < min <= max, got 5 and 2/],
    [['--min-epochs', '1.5'], /--min-epochs takes whole epochs, or a share of one pass below 1 such as 0.25 or 1\/9, got "1.5"/],
    [['--min-epochs', '1/0'], /--min-epochs takes whole epochs/],
    [['--min-epochs', '0'], /--min-epochs/],
    [['--eta', '1'], /--eta /],
    [['--val-split', '0'], /selects on validation data/],
    [['--budget', '0'], /--budget/],
    [['--parallel', '0'], /--parallel must be an integer between 1 and 16/],
    [['--parallel', '17'], /--parallel must be an integer between 1 and 16/],
  ];
  for (const [args, pattern] of cases) {
    const result = await runCli(['search', '--data', iris, '--device', 'cpu', '--trials', '2', ...args], dir);
    assert.notEqual(result.code, 0, `${args.join(' ')} should fail`);
    assert.ok(!hasStackTrace(result.stderr), result.stderr);
    assert.match(errorLine(result), pattern, args.join(' '));
  }
  assert.deepEqual(fs.readdirSync(dir), [], 'nothing written');
});
