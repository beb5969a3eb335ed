// A hyperparameter search through the UI API: search:start on an open dataset, search:progress per trial run,
// search:done with the leaderboard and the winner's model and test evaluation kept in the session; one search
// or training at a time; search:cancel ends it after the running trial with the best so far.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import { createApi, type ApiEvent, type DatasetInfo, type ModelInfo, type SearchInfo } from '../../../app/api';
import { RunStore } from '../../../app/services/runs';
import { irisCsv, resultOf, within } from './helpers';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-api-search-'));
const api = createApi({ uploadDir: path.join(scratch, 'uploads'), runHistory: new RunStore(path.join(scratch, 'runs')) });
after(async () => {
  await api.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

function searchDone(searchId: () => string | undefined, events: ApiEvent[]): Promise<SearchInfo> {
  return new Promise((resolve) => {
    const unsubscribe = api.subscribe((event) => {
      events.push(event);
      if (event.event === 'search:done' && event.payload.searchId === searchId()) {
        unsubscribe();
        resolve(event.payload);
      }
    });
  });
}

test('a search: progress per trial run, then the leaderboard and the winner kept as a model with its test evaluation', async () => {
  const iris = resultOf(await api.dispatch('datasets:open', { source: { kind: 'path', path: irisCsv } })) as DatasetInfo;
  const events: ApiEvent[] = [];
  let searchId: string | undefined;
  const done = searchDone(() => searchId, events);
  searchId = (resultOf(await api.dispatch('search:start', {
    datasetId: iris.id, trials: 4, minEpochs: 2, maxEpochs: 4, eta: 2, seed: 1, device: 'cpu', space: { batchSizes: [16] }, parallel: 2,
  })) as { searchId: string }).searchId;
  assert.equal(searchId, 'search-1');
  // while it runs, neither a training nor another search starts
  const training = await api.dispatch('training:start', { datasetId: iris.id, epochs: 1, device: 'cpu' });
  assert.match(training.error?.message ?? '', /search-1 is still searching/);
  const second = await api.dispatch('search:start', { datasetId: iris.id, trials: 2, device: 'cpu' });
  assert.match(second.error?.message ?? '', /search-1 is still searching/);

  const info = await within(done, 120_000, 'search:done');
  assert.equal(info.state, 'finished');
  assert.equal(info.error, undefined);
  assert.deepEqual(info.plan?.rungs, [{ epochs: 2, trials: 4 }, { epochs: 4, trials: 2 }]);
  assert.equal(info.plan?.parallel, 2);
  assert.equal(info.runs.length, 6);
  const firstRung = info.runs.filter((run) => run.rung === 0).map((run) => run.trial);
  assert.deepEqual(firstRung, [...firstRung].sort((a, b) => a - b), 'the first rung\'s runs in their trials\' order, whichever ended first');
  assert.equal(info.leaderboard?.length, 4);
  assert.deepEqual(info.best, info.leaderboard?.[0]);
  const progress = events.filter((event) => event.event === 'search:progress');
  assert.deepEqual(progress.map((event) => event.payload.type), ['plan', 'trial', 'trial', 'trial', 'trial', 'trial', 'trial']);
  // the winner: a model of the session, its test set evaluated once and kept for Evaluate
  const outcome = info.outcome!;
  assert.ok(outcome.modelId && outcome.evaluationId && outcome.test, 'model, evaluation and test metrics');
  const models = resultOf(await api.dispatch('models:list', {})) as ModelInfo[];
  assert.ok(models.some((model) => model.id === outcome.modelId && /search-1, trial \d/.test(model.name)), models.map((m) => m.name).join(', '));
  // a confusion cell's examples come from the kept evaluation, as for a training run's test set
  const examples = resultOf(await api.dispatch('evaluation:examples', { evaluationId: outcome.evaluationId!, actual: 0, predicted: 0 })) as { total: number };
  assert.equal(examples.total, outcome.test.report.confusion[0][0]);
  // status and list answer what search:done said (a copy made before any later change)
  const said = structuredClone(info);
  assert.deepEqual(resultOf(await api.dispatch('search:status', { searchId })), said);
  assert.deepEqual((resultOf(await api.dispatch('search:list', {})) as SearchInfo[]).map((each) => each.searchId), [searchId]);
  assert.equal(info.plan?.task, 'classification');
  assert.ok(info.runs.every((run) => run.score === null || (Number.isFinite(run.score) && run.score >= 0 && run.score <= 1)), 'scores are accuracies or null');
  // every trial run is in the run history
  const runs = resultOf(await api.dispatch('runs:list', {})) as { runs: unknown[] };
  assert.equal(runs.runs.length, 6);
});

test('search:cancel ends the search after the running trial, with the best so far', async () => {
  const iris = resultOf(await api.dispatch('datasets:open', { source: { kind: 'path', path: irisCsv } })) as DatasetInfo;
  const events: ApiEvent[] = [];
  let searchId: string | undefined;
  const done = searchDone(() => searchId, events);
  const cancelAfterFirst = api.subscribe((event) => {
    if (event.event === 'search:progress' && event.payload.type === 'trial' && event.payload.done === 1) {
      void api.dispatch('search:cancel', { searchId: searchId! });
    }
  });
  searchId = (resultOf(await api.dispatch('search:start', { datasetId: iris.id, trials: 5, minEpochs: 1, maxEpochs: 1, device: 'cpu' })) as { searchId: string }).searchId;
  const info = await within(done, 120_000, 'search:done').finally(cancelAfterFirst);
  assert.equal(info.cancelled, true);
  assert.equal(info.runs.length, 1);
  assert.ok(info.outcome?.modelId, 'the best so far is kept');
  const again = await api.dispatch('search:cancel', { searchId });
  assert.match(again.error?.message ?? '', /already finished/);
});

test('bad search requests are refused with the field named', async () => {
  const unknown = await api.dispatch('search:start', { datasetId: 'dataset-99', device: 'cpu' });
  assert.match(unknown.error?.message ?? '', /dataset-99/);
  const badSpace = await api.dispatch('search:start', { datasetId: 'dataset-1', space: { lr: [0.1, 0.01] } } as never);
  assert.match(badSpace.error?.message ?? '', /space/);
  const badParallel = await api.dispatch('search:start', { datasetId: 'dataset-1', parallel: 0 });
  assert.match(badParallel.error?.message ?? '', /parallel/);
  const noSearch = await api.dispatch('search:status', { searchId: 'search-99' });
  assert.match(noSearch.error?.message ?? '', /no search with id "search-99"/);
});

test('stopped while reading the data: finished, cancelled, no error, no winner', async () => {
  const iris = resultOf(await api.dispatch('datasets:open', { source: { kind: 'path', path: irisCsv } })) as DatasetInfo;
  const events: ApiEvent[] = [];
  let searchId: string | undefined;
  const done = searchDone(() => searchId, events);
  searchId = (resultOf(await api.dispatch('search:start', { datasetId: iris.id, trials: 2, device: 'cpu' })) as { searchId: string }).searchId;
  resultOf(await api.dispatch('search:cancel', { searchId }));
  const info = await within(done, 60_000, 'search:done');
  assert.equal(info.cancelled, true);
  assert.equal(info.error, undefined);
  assert.equal(info.outcome, undefined);
});

test('a session closing stops a search at once, its training trial cancelled', async () => {
  const own = createApi({ uploadDir: path.join(scratch, 'uploads-close'), runHistory: false });
  const iris = resultOf(await own.dispatch('datasets:open', { source: { kind: 'path', path: irisCsv } })) as DatasetInfo;
  const firstTrial = new Promise<number>((resolve) => own.subscribe((event) => {
    if (event.event === 'search:progress' && event.payload.type === 'trial') resolve(event.payload.run.seconds);
  }));
  // long trials: 400 epochs each, batch 1
  resultOf(await own.dispatch('search:start', { datasetId: iris.id, trials: 3, minEpochs: 400, maxEpochs: 400, device: 'cpu', space: { batchSizes: [1] } }));
  const trialSeconds = await within(firstTrial, 120_000, 'the first trial');
  const started = performance.now();
  await own.close();
  const closedSeconds = (performance.now() - started) / 1000;
  assert.ok(closedSeconds < trialSeconds / 2, `closed in ${closedSeconds.toFixed(2)} s, a trial takes ${trialSeconds.toFixed(2)} s: not after the running trial`);
});

test('a regression search says so in its plan, and scores R²', async () => {
  const csv = path.join(scratch, 'line.csv');
  fs.writeFileSync(csv, ['x,y', ...Array.from({ length: 120 }, (_, i) => `${i / 10},${(i / 10) * 2 + 1}`)].join('\n') + '\n');
  const line = resultOf(await api.dispatch('datasets:open', { source: { kind: 'path', path: csv } })) as DatasetInfo;
  let searchId: string | undefined;
  const done = searchDone(() => searchId, []);
  searchId = (resultOf(await api.dispatch('search:start', { datasetId: line.id, trials: 2, minEpochs: 2, maxEpochs: 2, device: 'cpu' })) as { searchId: string }).searchId;
  const info = await within(done, 60_000, 'search:done');
  assert.equal(info.plan?.task, 'regression');
  assert.ok(info.outcome?.test?.regression, 'the winner\'s test is a regression report');
});
