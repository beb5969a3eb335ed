// A search's screening rungs train on a share of the training split (TrainRequest.trainShare): a seeded,
// stratified subset, the same validation set, recorded in the run so that a resume trains on the same rows.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { prepareRun } from '../../../app/services/trainingSetup';
import { runSearch } from '../../../app/services/search';

const repoRoot = path.resolve(__dirname, '../../../..');
const iris = { kind: 'csv' as const, path: path.join(repoRoot, 'resources', 'samples', 'iris.csv') };

test('a share of the training split: fewer rows, every class kept, the same validation and test sets', async () => {
  const base = { data: iris, model: {}, epochs: 1, seed: 5, device: 'cpu' as const, threads: 1 };
  const whole = await prepareRun(base);
  const third = await prepareRun({ ...base, trainShare: 1 / 3 });
  assert.equal(third.plan.trainCount, Math.round(whole.plan.trainCount / 3));
  assert.equal(third.plan.validationCount, whole.plan.validationCount);
  assert.deepEqual(third.sets.validation?.features, whole.sets.validation?.features);
  assert.deepEqual(third.sets.test?.features, whole.sets.test?.features);
  assert.deepEqual(new Set(third.sets.train.labels), new Set(whole.sets.train.labels), 'stratified: every class stays');
  assert.equal(third.record.trainShare, 1 / 3);
  assert.equal(whole.plan.precision, 'fp32', 'the CPU computes in FP32, and the plan says so');
  assert.equal(whole.record.precision, 'fp32');
  assert.equal(whole.record.trainShare, undefined);
  const again = await prepareRun({ ...base, trainShare: 1 / 3 });
  assert.deepEqual(again.sets.train.features, third.sets.train.features, 'seeded: the same rows');
  await assert.rejects(prepareRun({ ...base, trainShare: 0 }), /share of the training split must be in \(0, 1\], got 0/);
  await assert.rejects(prepareRun({ ...base, trainShare: 1.5 }), /got 1.5/);
});

test('a search whose first rung is a share: its trials train on that share, the next rung on all of it', async () => {
  const result = await runSearch({ data: iris, trials: 4, minEpochs: 0.5, maxEpochs: 1, eta: 2, seed: 1, device: 'cpu', threads: 1 });
  assert.deepEqual(result.rungs, [{ epochs: 0.5, trials: 4 }, { epochs: 1, trials: 2 }]);
  assert.deepEqual(result.runs.map((run) => run.epochs), [0.5, 0.5, 0.5, 0.5, 1, 1]);
  const [screened, full] = [result.runs[0].trainExamples, result.runs[5].trainExamples];
  assert.ok(Math.abs(screened - full / 2) <= 1, `half the training split: ${screened} of ${full}`);
  assert.ok(result.runs.slice(0, 4).every((run) => run.trainExamples === screened));
  assert.equal(result.outcome.model.training?.history.length, 1, 'a share is one pass');
  const options = result.outcome.model.training?.options as Record<string, unknown>;
  assert.equal(options.trainShare, result.best.epochs < 1 ? result.best.epochs : undefined, 'a winner from a share says so');
  assert.ok(result.outcome.test, 'the winner is tested');
});
