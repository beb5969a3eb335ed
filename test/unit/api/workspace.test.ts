// The session's workspace (workspace:get / :update / workspace:changed): kept on the server for every tab,
// validated by its schema, each change sent to every subscriber with the tab that made it; and the session's
// memory of a run's outcome (training:list) and of an evaluation (evaluation:get) that a reloaded page uses,
// and training:continue by a number of epochs to add.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createApi, type ApiEvent, type DatasetInfo, type EvaluationResult, type RunInfo, type TrainingDone, type Workspace } from '../../../app/api';
import { irisCsv, resultOf, within } from './helpers';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-workspace-'));
const api = createApi({ uploadDir: path.join(scratch, 'uploads'), runHistory: false });
after(async () => {
  await api.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

const drafts: Workspace = {
  datasetId: 'dataset-1',
  split: { valSplit: 0.2, testSplit: null, normalization: { 'dataset-1': 'minmax' } },
  imputation: { 'dataset-1': { all: { strategy: 'median', fillValue: null, indicator: true }, columns: { x: { strategy: 'constant', fillValue: 3, indicator: null } } } },
  model: { layers: [{ kind: 'dense', units: 16, activation: 'relu' }, { kind: 'conv2d', filters: 8, kernel: [3, 3], stride: 1, padding: 'same', activation: 'relu' }, { kind: 'residual', layers: [{ kind: 'conv2d', filters: 8, kernel: [3, 3], stride: 1, padding: 'same' }] }], settings: { loss: 'softmax_cross_entropy', optimizer: 'adam', lr: 0.01, momentum: 0.9, weightDecay: null, seed: 4 } },
  training: {
    batchSize: 32, epochs: 7, device: 'cpu',
    schedule: { kind: 'cosine', everyEpochs: 10, gamma: 0.5, minLr: 0, maxLr: null, pctStart: 0.3, divFactor: 25, finalDivFactor: 1e4 },
    earlyStopping: { monitor: 'off', patience: 3, minDelta: 0, restoreBest: false },
  },
  watchedRunId: 'run-3',
  shownEvaluation: { evaluationId: 'evaluation-2', title: 'a model on a file' },
};

function awaitDone(runId: string): Promise<TrainingDone> {
  let unsubscribe = () => {};
  const done = new Promise<TrainingDone>((resolve) => {
    unsubscribe = api.subscribe((event) => {
      if (event.event === 'training:done' && event.payload.runId === runId) resolve(event.payload);
    });
  });
  return within(done, 60_000, `training:done of ${runId}`).finally(() => unsubscribe());
}

describe('the session\'s workspace', () => {
  test('a new session has an empty workspace at revision 0', async () => {
    assert.deepEqual(resultOf(await api.dispatch('workspace:get', {})), { revision: 0, state: {} });
  });

  test('an update is kept whole, bumps the revision and reaches every subscriber with the tab that sent it', async () => {
    const seen: ApiEvent[] = [];
    const unsubscribe = api.subscribe((event) => seen.push(event));
    const { revision } = resultOf(await api.dispatch('workspace:update', { clientId: 'tab-a', state: drafts })) as { revision: number };
    unsubscribe();
    assert.equal(revision, 1);
    assert.deepEqual(resultOf(await api.dispatch('workspace:get', {})), { revision: 1, state: drafts });
    assert.deepEqual(seen, [{ event: 'workspace:changed', payload: { revision: 1, clientId: 'tab-a', state: drafts } }]);
  });

  test('a workspace that breaks its schema is refused, naming the field, and the kept one stays', async () => {
    const bad = [
      { ...drafts, training: { ...drafts.training!, device: 'tpu' } },
      { ...drafts, model: { ...drafts.model!, layers: [{ units: 3 }] } },
      { ...drafts, model: { ...drafts.model!, layers: [{ kind: 'dense', layers: [{ kind: 'dense', units: 3 }] }] } },
      { ...drafts, model: { ...drafts.model!, layers: [{ kind: 'dense', units: 'x'.repeat(500) }] } },
      { ...drafts, unknownField: 1 },
      { ...drafts, split: { ...drafts.split!, valSplit: Number.POSITIVE_INFINITY } },
    ];
    for (const state of bad) {
      const answer = await api.dispatch('workspace:update', { clientId: 'tab-b', state });
      assert.ok(answer.error, `refused: ${JSON.stringify(state).slice(0, 80)}`);
    }
    const shown = await api.dispatch('workspace:update', { clientId: 'tab-b', state: bad[0] });
    assert.match(shown.error!.message, /training\.device/);
    assert.deepEqual((resultOf(await api.dispatch('workspace:get', {})) as { state: Workspace }).state, drafts);
  });
});

describe('what every tab lists', () => {
  test('opening or closing a dataset tells every tab to list datasets again (session:changed)', async () => {
    const seen: ApiEvent[] = [];
    const unsubscribe = api.subscribe((event) => seen.push(event));
    const opened = resultOf(await api.dispatch('datasets:open', { source: { kind: 'path', path: irisCsv } })) as DatasetInfo;
    resultOf(await api.dispatch('datasets:close', { datasetId: opened.id }));
    await api.dispatch('datasets:close', { datasetId: opened.id }); // refused: nothing changed, nothing said
    unsubscribe();
    assert.deepEqual(seen, [
      { event: 'session:changed', payload: { lists: ['datasets'] } },
      { event: 'session:changed', payload: { lists: ['datasets'] } },
    ]);
  });
});

describe('what a reloaded page finds again', () => {
  let iris: DatasetInfo;
  let first: TrainingDone;

  test('training:list has every run with its epochs, outcome and per-step loss', async () => {
    iris = resultOf(await api.dispatch('datasets:open', { source: { kind: 'path', path: irisCsv } })) as DatasetInfo;
    const { runId } = resultOf(await api.dispatch('training:start', { datasetId: iris.id, model: { layers: 'dense:8:relu,dense:3' }, epochs: 3, batchSize: 16, device: 'cpu', threads: 1, seed: 1 })) as { runId: string };
    first = await awaitDone(runId);
    const [listed] = resultOf(await api.dispatch('training:list', {})) as RunInfo[];
    assert.equal(listed.runId, runId);
    assert.equal(listed.state, 'finished');
    assert.deepEqual(listed.epochs.map((epoch) => epoch.epoch), [1, 2, 3]);
    assert.equal(listed.outcome?.status, 'completed');
    assert.equal(listed.checkpointEpoch, 3);
    assert.ok((listed.stepLoss?.length ?? 0) >= 3 && listed.stepLoss!.every((point) => Number.isFinite(point.y)), 'the per-step loss');
  });

  test('training:continue with moreEpochs trains that many beyond the checkpoint; with both forms it is refused', async () => {
    const both = await api.dispatch('training:continue', { runId: first.runId, epochs: 9, moreEpochs: 2 });
    assert.match(both.error?.message ?? '', /not both/);
    const { runId } = resultOf(await api.dispatch('training:continue', { runId: first.runId, moreEpochs: 2, device: 'cpu' })) as { runId: string };
    const done = await awaitDone(runId);
    assert.equal(done.status, 'completed', done.message);
    assert.deepEqual(done.history.map((epoch) => epoch.epoch), [1, 2, 3, 4, 5], 'three epochs kept, two added');
  });

  test('evaluation:get answers an evaluation again; an unknown id is named', async () => {
    const evaluated = resultOf(await api.dispatch('evaluation:evaluate', { modelId: first.modelId!, datasetId: iris.id, device: 'cpu' })) as EvaluationResult;
    assert.deepEqual(resultOf(await api.dispatch('evaluation:get', { evaluationId: evaluated.evaluationId })), evaluated);
    const missing = await api.dispatch('evaluation:get', { evaluationId: 'evaluation-999' });
    assert.match(missing.error?.message ?? '', /no evaluation with id "evaluation-999"/);
  });
});
