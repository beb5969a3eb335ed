// The search service end to end on the CPU: iris, 6 trials over 2 rungs, recorded in a run history.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import * as engine from '../../../app/engine';
import { RunStore } from '../../../app/services/runs';
import { trainModel } from '../../../app/services/training';
import { defaultMaxEpochs, runSearch, searchPlan, trialRequest, type SearchEvent, type SearchRequest } from '../../../app/services/search';

const repoRoot = path.resolve(__dirname, '../../../..');
const iris = path.join(repoRoot, 'resources', 'samples', 'iris.csv');

const request: SearchRequest = {
  data: { kind: 'csv', path: iris },
  trials: 6, minEpochs: 1, maxEpochs: 3, eta: 3, seed: 3, device: 'cpu', threads: 1,
  space: { batchSizes: [16, 32] },
};

test('a search: every trial at the first rung, the best third at the next, the winner tested once, every run recorded', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-search-'));
  const store = new RunStore(dir);
  const events: SearchEvent[] = [];
  const result = await runSearch(request, { history: { store }, onEvent: (event) => events.push(event) });

  assert.deepEqual(result.rungs, [{ epochs: 1, trials: 6 }, { epochs: 3, trials: 2 }]);
  assert.equal(result.kind, 'table');
  assert.equal(result.runs.length, 8);
  assert.deepEqual(result.runs.map((run) => run.epochs), [1, 1, 1, 1, 1, 1, 3, 3]);
  // the second rung's trials are the first rung's two best
  const first = result.runs.slice(0, 6).sort((a, b) => b.score - a.score || a.validationLoss - b.validationLoss || a.config.trial - b.config.trial);
  assert.deepEqual(new Set(result.runs.slice(6).map((run) => run.config.trial)), new Set(first.slice(0, 2).map((run) => run.config.trial)));
  // the leaderboard: each trial's best run, by validation score
  assert.equal(result.leaderboard.length, 6);
  const scores = result.leaderboard.map((run) => run.score);
  assert.deepEqual(scores, [...scores].sort((a, b) => b - a));
  assert.equal(result.best, result.leaderboard[0]);
  for (const promoted of result.runs.slice(6)) {
    const first = result.runs.find((run) => run.config.trial === promoted.config.trial)!;
    const listed = result.leaderboard.find((run) => run.config.trial === promoted.config.trial)!;
    assert.equal(listed.score, Math.max(first.score, promoted.score), 'a promoted trial is listed with its better run');
  }
  assert.ok(result.best.score > 0.5, `the best validates above chance: ${result.best.score}`);
  // the test set: the winner's alone
  assert.ok(result.outcome.test, 'the winner has test metrics');
  assert.equal(result.outcome.model.metrics?.testLoss, result.outcome.test.loss);
  assert.equal(result.outcome.request.epochs, result.best.epochs);
  // events: the plan, then one per trial run
  assert.equal(events[0].type, 'plan');
  assert.deepEqual(events.slice(1).map((event) => event.type === 'trial' && event.done), [1, 2, 3, 4, 5, 6, 7, 8]);
  // the run history: every trial run, none with test metrics but the winner's record is a trial like the others
  const listing = await store.list();
  assert.equal(listing.runs.length, 8);
  assert.ok(result.runs.every((run) => run.runId !== undefined));
});

test('the same seed gives the same search; another seed another', async () => {
  const a = await runSearch({ ...request, trials: 3, maxEpochs: 1 });
  const b = await runSearch({ ...request, trials: 3, maxEpochs: 1 });
  const c = await runSearch({ ...request, trials: 3, maxEpochs: 1, seed: 4 });
  assert.deepEqual(b.runs.map((run) => [run.config, run.score]), a.runs.map((run) => [run.config, run.score]));
  assert.notDeepEqual(c.runs.map((run) => run.config), a.runs.map((run) => run.config));
  assert.deepEqual(b.outcome.model.parameters, a.outcome.model.parameters);
});

test('trials side by side: the same runs, leaderboard and winner as one at a time', async () => {
  const events: SearchEvent[] = [];
  const one = await runSearch({ ...request, parallel: 1 });
  const three = await runSearch({ ...request, parallel: 3 }, { onEvent: (event) => events.push(event) });
  const summary = (runs: typeof one.runs) => runs.map((run) => [run.config.trial, run.rung, run.epochs, run.score, run.validationLoss]);
  assert.deepEqual(summary(three.runs), summary(one.runs), 'each rung\'s runs in the order of its trials');
  assert.deepEqual(summary(three.leaderboard), summary(one.leaderboard));
  assert.deepEqual(three.best.config, one.best.config);
  assert.deepEqual(three.outcome.model.parameters, one.outcome.model.parameters);
  assert.equal(events[0].type === 'plan' && events[0].parallel, 3);
  assert.deepEqual(events.slice(1).map((event) => event.type === 'trial' && event.done), [1, 2, 3, 4, 5, 6, 7, 8]);
});

test('side by side under a time budget: the trials started first train, no later one starts', async () => {
  const result = await runSearch({ ...request, trials: 6, maxEpochs: 1, budgetSeconds: 0.001, parallel: 2 });
  assert.equal(result.outOfTime, true);
  assert.equal(result.runs.length, 2);
  assert.ok(result.outcome.test, 'the better of the two is tested');
});

test('side by side, a trial failing with an error of its own cancels the trials beside it, and the search fails with it', async () => {
  const sawAbort: number[] = [];
  let calls = 0;
  const failing: typeof trainModel = async (trial, hooks) => {
    const index = calls++;
    if (index === 1) {  // trial 0 is training: it must be stopped now, not left to finish
      await new Promise((resolve) => setTimeout(resolve, 20));
      throw new Error('the data file vanished');
    }
    await new Promise<void>((resolve, reject) => {
      const waited = setTimeout(() => reject(new Error('trial ' + index + ' was not cancelled')), 5000);
      hooks?.signal?.addEventListener('abort', () => { clearTimeout(waited); sawAbort.push(index); resolve(); }, { once: true });
    });
    return { status: 'cancelled' } as Awaited<ReturnType<typeof trainModel>>;
  };
  await assert.rejects(runSearch({ ...request, parallel: 2 }, { trainTrial: failing }), /the data file vanished/);
  assert.deepEqual(sawAbort, [0], 'trial 0 saw the abort');
  assert.equal(calls, 2, 'no trial starts after the failure');
});

test('a search refuses to select without validation data', async () => {
  await assert.rejects(runSearch({ ...request, valSplit: 0 }), /selects on validation data/);
});

test('a cancelled search keeps the trials that finished, and tests the best of them', async () => {
  const abort = new AbortController();
  const result = await runSearch({ ...request, trials: 4, maxEpochs: 1 }, {
    signal: abort.signal,
    onEvent: (event) => { if (event.type === 'trial' && event.done === 2) abort.abort(); },
  });
  assert.equal(result.cancelled, true);
  assert.equal(result.runs.length, 2);
  assert.ok(result.runs.every((run) => run.status !== 'cancelled'));
  assert.ok(result.outcome.test, 'the best so far is tested');
});

test('the default epochs: 9 at the last rung for 60 000 examples, more for fewer (up to 180)', () => {
  assert.equal(defaultMaxEpochs(60000), 9);
  assert.equal(defaultMaxEpochs(1797), 180);
  assert.equal(defaultMaxEpochs(10000), 54);
  assert.equal(defaultMaxEpochs(1_000_000), 9);
});

test('the default plan: as many rungs as the trials allow, screening on shares of the data where it is large', () => {
  // MNIST, 100 trials: 1/9, 1/3, 1, 3 and 9 epochs, about 51 epochs in all instead of 100 + 99 + 99
  assert.deepEqual(searchPlan({ trials: 100 }, 60000, 54000), [
    { epochs: 0.1111, trials: 100 }, { epochs: 0.3333, trials: 33 }, { epochs: 1, trials: 11 }, { epochs: 3, trials: 3 }, { epochs: 9, trials: 1 },
  ]);
  // digits: a trial sees at least 2000 examples, so the first rung stays at whole epochs
  assert.deepEqual(searchPlan({ trials: 27 }, 1797, 1258).map((rung) => rung.epochs), [7, 21, 61, 180]);
  // iris: at least 2000 examples a trial (15 epochs of 105), then evenly up to 180 on a log scale
  assert.deepEqual(searchPlan({ trials: 27 }, 150, 105).map((rung) => rung.epochs), [19, 40, 85, 180]);
  // what the request names wins
  assert.deepEqual(searchPlan({ trials: 9, minEpochs: 2, maxEpochs: 6, eta: 3 }, 60000, 54000), [{ epochs: 2, trials: 9 }, { epochs: 6, trials: 3 }]);
  assert.deepEqual(searchPlan({ trials: 9, minEpochs: 0.25, maxEpochs: 1, eta: 2 }, 60000, 54000).map((rung) => rung.epochs), [0.25, 0.5, 1]);
});

test('a trial drawn without weight decay trains without it, though a table\'s default model has some', async () => {
  const config = { trial: 1, depth: 1, width: 8, lr: 0.01, schedule: 'constant' as const, batchSize: 16, weightDecay: 0, augment: 'none' as const };
  const trial = trialRequest(request, config, 'table', 3, 2, 0);
  assert.equal(trial.model.weightDecay, 0);
  const result = await runSearch({ ...request, trials: 1, maxEpochs: 1, space: { weightDecay: [1e-7, 1e-7], depth: [1, 1] } });
  assert.ok([0, 1e-7].includes(result.outcome.model.spec.optimizer.weightDecay ?? 0), `decay ${result.outcome.model.spec.optimizer.weightDecay}`);
});

test('a small regression table still validates every trial (train would take no validation share under 50 rows)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-search-reg-'));
  const rows = ['x1,x2,y', ...Array.from({ length: 40 }, (_, i) => `${i % 7},${(i * 3) % 11},${(i % 7) * 2 + ((i * 3) % 11) * 0.5}`)];
  fs.writeFileSync(path.join(dir, 'small.csv'), `${rows.join('\n')}\n`);
  const result = await runSearch({ data: { kind: 'csv', path: path.join(dir, 'small.csv') }, trials: 3, maxEpochs: 2, device: 'cpu', threads: 1 });
  assert.ok(result.runs.every((run) => Number.isFinite(run.score)), `R² scores: ${result.runs.map((run) => run.score)}`);
  assert.ok(result.outcome.test?.regression, 'the winner\'s test is a regression report');
});

test('the trials\' shared splits and sets give the bits of a trial trained on its own', async () => {
  const result = await runSearch({ ...request, trials: 3, maxEpochs: 2, minEpochs: 2 });
  const alone = await trainModel(trialRequest({ ...request, valSplit: 0.1 }, result.best.config, 'table', 3, result.best.epochs, 3));
  assert.deepEqual(alone.model.parameters, result.outcome.model.parameters);
  assert.deepEqual(alone.plan.validationCount, result.outcome.plan.validationCount);
});

test('a time budget: no trial starts after it, the first always trains, the best so far is tested', async () => {
  const result = await runSearch({ ...request, trials: 5, maxEpochs: 1, budgetSeconds: 0.001 });
  assert.equal(result.outOfTime, true);
  assert.equal(result.cancelled, false);
  assert.equal(result.runs.length, 1);
  assert.ok(result.outcome.test, 'the only trial is the winner, tested');
  const roomy = await runSearch({ ...request, trials: 2, maxEpochs: 1, budgetSeconds: 3600 });
  assert.equal(roomy.outOfTime, false);
  assert.equal(roomy.runs.length, 2);
});

test('--device cuda without a CUDA device: refused before the plan is announced', { skip: engine.cudaAvailable() }, async () => {
  const events: SearchEvent[] = [];
  await assert.rejects(runSearch({ ...request, trials: 2, device: 'cuda' }, { onEvent: (event) => events.push(event) }), /no CUDA device/);
  assert.equal(events.length, 0);
});
