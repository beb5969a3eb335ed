// The run file format (app/core/runs/runFile.ts) and the comparison of two runs (app/core/runs/compare.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compareRuns } from '../../../app/core/runs/compare';
import { decodeRun, encodeRun, newRunId, RunFileError, summarizeRun, type RunRecord } from '../../../app/core/runs/runFile';
import { runRecordFrom, runStatusOf } from '../../../app/services/runs';
import { fakeRun } from './fixtures';

const startedAt = new Date(Date.UTC(2025, 2, 14, 9, 30, 15));

function record(options: Parameters<typeof fakeRun>[0] = {}, id = '20250314-093015-a1b2'): RunRecord {
  const run = fakeRun(options);
  return runRecordFrom(run.outcome, { startedAt, request: run.request }, new Date(startedAt.getTime() + 2000), id);
}

describe('run files', () => {
  test('a record survives encoding and decoding, and carries everything the brief lists', () => {
    const original = record();
    const text = encodeRun(original);
    const decoded = decodeRun(text, `${original.id}.json`);
    assert.deepEqual(decoded, original);
    assert.equal(decoded.formatVersion, 1);
    assert.equal(decoded.status, 'completed');
    assert.equal(decoded.createdAt, '2025-03-14T09:30:15.000Z');
    assert.equal(decoded.finishedAt, '2025-03-14T09:30:17.000Z');
    assert.deepEqual(decoded.spec.layers, [{ kind: 'dense', units: 2 }]);
    assert.deepEqual(
      { epochs: decoded.options.epochs, batchSize: decoded.options.batchSize, optimizer: decoded.options.optimizer, lr: decoded.options.lr, seed: decoded.options.seed },
      { epochs: 3, batchSize: 4, optimizer: 'sgd', lr: 0.1, seed: 7 },
    );
    assert.equal(decoded.options.device, 'cpu');
    assert.equal(decoded.options.deviceName, 'cpu (1 thread)');
    assert.equal(decoded.options.normalize, 'zscore');
    assert.equal(decoded.options.valSplit, 0.1);
    assert.equal(decoded.options.testSplit, 0.2);
    assert.equal('threads' in decoded.options, false, 'the thread count is not a setting worth comparing');
    assert.equal(decoded.data.name, 'toy.csv');
    assert.equal(decoded.data.description, '/data/toy.csv');
    assert.equal(decoded.data.kind, 'table');
    assert.deepEqual([decoded.data.trainCount, decoded.data.validationCount, decoded.data.testCount], [14, 2, 4]);
    assert.equal(decoded.history.length, 3);
    assert.equal(decoded.seconds, 0.75);
    assert.equal(decoded.test?.loss, 0.4);
    assert.equal(decoded.test?.report.accuracy, 0.75);
    assert.deepEqual(decoded.test?.report.confusion, [[1, 1], [0, 2]]);
    assert.equal(decoded.modelFile, null, 'the store sets the model file when it writes one');
    assert.match(decoded.name, /^toy\.csv, 2025-03-1\d \d\d:\d\d:\d\d$/);
  });

  test('later options (schedules, early stopping) are kept as the training record gave them', () => {
    const run = fakeRun();
    run.outcome.model.training!.options.lrSchedule = { kind: 'cosine' };
    const withExtra = runRecordFrom(run.outcome, { startedAt, request: run.request }, startedAt, 'x1');
    assert.deepEqual(decodeRun(encodeRun(withExtra), 'x1.json').options.lrSchedule, { kind: 'cosine' });
  });

  test('statuses: the engine\'s spellings map to the file\'s, unknown ones are refused', () => {
    assert.equal(runStatusOf('completed'), 'completed');
    assert.equal(runStatusOf('early_stopped'), 'early-stopped');
    assert.equal(runStatusOf('earlyStopped'), 'early-stopped');
    assert.equal(runStatusOf('diverged'), 'diverged');
    assert.throws(() => runStatusOf('exploded'), /unknown run status "exploded"/);
    assert.equal(record({ status: 'cancelled' }).status, 'cancelled');
  });

  test('bad files are reported by name with the first problem', () => {
    const good = JSON.parse(encodeRun(record())) as Record<string, unknown>;
    const bad = (value: unknown) => JSON.stringify(value);
    const cases: [string, RegExp][] = [
      ['{"formatVersion": 1,', /^r\.json: not valid JSON/],
      ['[1,2]', /^r\.json: not a JSON object/],
      [bad({ id: 'x' }), /^r\.json: no formatVersion: not an NN Studio run file/],
      [bad({ ...good, formatVersion: 2 }), /^r\.json: format version 2 is not supported: this NN Studio reads version 1 \(written by a newer NN Studio\)/],
      [bad({ ...good, formatVersion: 'one' }), /^r\.json: formatVersion "one" is not a version number/],
      [bad({ ...good, status: 'exploded' }), /^r\.json: status: /],
      [bad({ ...good, history: [{ epoch: 0, trainLoss: 1, trainAccuracy: 1, seconds: 1 }] }), /^r\.json: history\.0\.epoch: /],
      [bad({ ...good, spec: { ...(good.spec as object), layers: [{ kind: 'dense' }] } }), /^r\.json: spec\.layers\.0/],
      [bad({ ...good, modelFile: '../../etc/passwd.safetensors' }), /^r\.json: modelFile: a file name in the runs folder/],
      [bad({ ...good, createdAt: 'yesterday' }), /^r\.json: createdAt: expected an ISO 8601 time/],
    ];
    for (const [text, message] of cases) {
      assert.throws(() => decodeRun(text, 'r.json'), (error: unknown) => error instanceof RunFileError && message.test(error.message), text.slice(0, 60));
    }
    assert.throws(() => decodeRun(encodeRun(record()), 'other-id.json'), /id "20250314-093015-a1b2" does not match the file name/);
  });

  test('unknown fields of the same version are ignored (a later NN Studio may add some)', () => {
    const text = JSON.stringify({ ...JSON.parse(encodeRun(record())), notes: 'from the future' });
    assert.equal(decodeRun(text, '20250314-093015-a1b2.json').id, '20250314-093015-a1b2');
  });

  test('encodeRun refuses a record that would not read back', () => {
    assert.throws(() => encodeRun({ ...record(), id: '../escape' }), /id: /);
  });

  test('ids sort by start time and are safe file names', () => {
    assert.equal(newRunId(startedAt, 'a1b2'), '20250314-093015-a1b2');
    assert.ok(newRunId(new Date(Date.UTC(2025, 0, 2)), '0000') < newRunId(new Date(Date.UTC(2025, 0, 10)), '0000'));
  });

  test('a summary has the table\'s columns', () => {
    const summary = summarizeRun(record());
    assert.deepEqual(
      { data: summary.data, model: summary.model, epochs: summary.epochs, testAccuracy: summary.testAccuracy, testMacroF1: summary.testMacroF1, parameters: summary.parameters },
      { data: 'toy.csv', model: 'dense:2', epochs: 3, testAccuracy: 0.75, testMacroF1: summary.testMacroF1, parameters: 6 },
    );
    assert.ok(summary.testMacroF1! > 0.7 && summary.testMacroF1! < 0.75);
  });
});

describe('comparing two runs', () => {
  test('metrics side by side with the difference, settings that differ, history aligned by epoch', () => {
    const first = record({ epochs: 3, lr: 0.1 }, 'first');
    const second = record({ epochs: 5, lr: 0.05, accuracyShift: 0.2 }, 'second');
    const comparison = compareRuns(first, second);
    const accuracy = comparison.metrics.find((row) => row.name === 'test accuracy')!;
    assert.equal(accuracy.first, 0.75);
    assert.equal(accuracy.second, 1);
    assert.equal(accuracy.difference, 0.25);
    const epochs = comparison.metrics.find((row) => row.name === 'epochs')!;
    assert.deepEqual([epochs.first, epochs.second, epochs.difference], [3, 5, 2]);
    const lr = comparison.settings.find((row) => row.name === 'learning rate')!;
    assert.deepEqual([lr.first, lr.second, lr.same], ['0.1', '0.05', false]);
    assert.equal(comparison.settings.find((row) => row.name === 'optimizer')!.same, true);
    assert.equal(comparison.history.length, 5);
    assert.equal(comparison.history[2].first?.epoch, 3);
    assert.equal(comparison.history[3].first, null, 'the shorter run has no epoch 4');
    assert.equal(comparison.history[4].second?.epoch, 5);
  });

  test('a run without a test set compares with null metrics, not NaN', () => {
    const first = { ...record({}, 'a'), test: null };
    const row = compareRuns(first, record({}, 'b')).metrics.find((entry) => entry.name === 'test loss')!;
    assert.deepEqual([row.first, row.second, row.difference], [null, 0.4, null]);
  });
});
