// Failures nobody asked about are logged with their context through the session's logger, never swallowed:
// a subscriber that throws does not stop the run (the engine would cancel it), and the log names the event
// and the run.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createApi, type DatasetInfo, type TrainingDone } from '../../../app/api';
import { captureLog, irisCsv, resultOf, within } from './helpers';

describe('the session log', () => {
  const log = captureLog();
  const api = createApi({ runHistory: false, logger: log.logger });
  after(() => api.close());

  test('a listener that throws is logged with the event and the run; the run and the other listeners go on', async () => {
    api.subscribe((event) => {
      if (event.event === 'training:progress' && event.payload.type === 'epoch') throw new Error('the chart fell over');
    });
    const iris = resultOf(await api.dispatch('datasets:open', { source: { kind: 'path', path: irisCsv } })) as DatasetInfo;
    const { runId } = resultOf(await api.dispatch('training:start', { datasetId: iris.id, epochs: 3, device: 'cpu', threads: 1 })) as { runId: string };
    const done = await within(
      new Promise<TrainingDone>((resolve) => api.subscribe((event) => event.event === 'training:done' && event.payload.runId === runId && resolve(event.payload))),
      60_000,
      'training:done',
    );
    assert.equal(done.status, 'completed', done.message);
    assert.equal(done.history.length, 3);
    const failures = log.entries.filter((entry) => entry.level === 'error');
    assert.equal(failures.length, 3, log.text());
    assert.match(log.text(), new RegExp(`^error: a listener of training:progress \\(${runId}\\) failed: the chart fell over$`, 'm'));
  });
});
