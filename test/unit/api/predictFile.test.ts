// models:predictFile: an open dataset predicted by a session model, answered as the CSV `nnstudio predict`
// writes (one definition, app/services/predictionCsv.ts) with a preview; a file without the label column
// opens with csv.unlabeled, predicts, and cannot be trained on.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createApi, type ApiEvent, type DatasetInfo, type PredictionFile, type TrainingDone } from '../../../app/api';
import { services } from '../../../app/services';
import { irisCsv, resultOf, within } from './helpers';
import { writeDigitFolder } from '../../support/imageFolder';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-api-predictfile-'));
const api = createApi({ uploadDir: path.join(scratch, 'uploads') });
after(async () => {
  await api.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

function trained(runId: string): Promise<TrainingDone> {
  return new Promise((resolve) => {
    const stop = api.subscribe((event: ApiEvent) => {
      if (event.event === 'training:done' && event.payload.runId === runId) {
        stop();
        resolve(event.payload);
      }
    });
  });
}

describe('models:predictFile', () => {
  test('iris with and without its label column: the CLI\'s CSV, 20 preview rows, a written file; no training on unlabeled data', async () => {
    const labelled = resultOf(await api.dispatch('datasets:open', { source: { kind: 'path', path: irisCsv } })) as DatasetInfo;
    const { runId } = resultOf(await api.dispatch('training:start', { datasetId: labelled.id, epochs: 2, device: 'cpu', seed: 1 })) as { runId: string };
    const done = await within(trained(runId), 60_000, 'training:done');
    assert.equal(done.status, 'completed', done.message);
    const modelId = done.modelId!;

    // The same rows without the species column.
    const lines = fs.readFileSync(irisCsv, 'utf8').trim().split(/\r?\n/);
    const header = lines[0].split(',');
    const labelIndex = header.indexOf('species');
    assert.ok(labelIndex >= 0, `iris.csv has a species column: ${header}`);
    const unlabeledFile = path.join(scratch, 'new flowers.csv');
    fs.writeFileSync(unlabeledFile, `${lines.map((line) => line.split(',').filter((_, index) => index !== labelIndex).join(',')).join('\n')}\n`);
    const unlabeled = resultOf(await api.dispatch('datasets:open', { source: { kind: 'path', path: unlabeledFile, csv: { unlabeled: true } } })) as DatasetInfo;
    assert.equal(unlabeled.unlabeled, true);
    assert.equal(unlabeled.count, lines.length - 1);

    const target = path.join(scratch, 'out.csv');
    const answer = resultOf(await api.dispatch('models:predictFile', { modelId, datasetId: unlabeled.id, device: 'cpu', path: target })) as PredictionFile;
    assert.equal(answer.rows, lines.length - 1);
    assert.deepEqual(answer.columns, ['row', 'predicted', 'p_setosa', 'p_versicolor', 'p_virginica']);
    assert.equal(answer.preview.length, 20);
    assert.equal(answer.fileName, 'iris.csv (run-1) on new flowers predictions.csv');
    assert.equal(fs.readFileSync(target, 'utf8'), answer.csv, 'path: the same CSV written there');
    // The CLI's service gives the same text for the same model and file.
    const cliModelFile = path.join(scratch, 'iris.safetensors');
    resultOf(await api.dispatch('models:save', { modelId, path: cliModelFile }));
    const cli = services.evaluation.predictionsCsv(await services.evaluation.predict(await services.models.load(cliModelFile), { kind: 'csv', path: unlabeledFile }, { device: 'cpu' }));
    assert.equal(answer.csv, cli);

    const labelledAnswer = resultOf(await api.dispatch('models:predictFile', { modelId, datasetId: labelled.id, device: 'cpu' })) as PredictionFile;
    assert.deepEqual(labelledAnswer.columns.slice(0, 3), ['row', 'predicted', 'label'], 'a labelled file keeps its label beside the prediction');

    const refused = await api.dispatch('training:start', { datasetId: unlabeled.id, epochs: 1, device: 'cpu' });
    assert.match(refused.error?.message ?? '', /new flowers\.csv was opened without a label column/);
  });

  test('an image folder: each prediction names its image', async () => {
    const folder = path.join(scratch, 'digits');
    await writeDigitFolder(folder, { perClass: 6, formats: ['png'] });
    const opened = resultOf(await api.dispatch('datasets:open', { source: { kind: 'path', path: folder, image: { size: [12, 12] } } })) as DatasetInfo;
    const { runId } = resultOf(await api.dispatch('training:start', { datasetId: opened.id, model: { layers: 'conv:4x3:relu,gap,dense:3' }, epochs: 1, device: 'cpu' })) as { runId: string };
    const done = await within(trained(runId), 60_000, 'training:done');
    assert.equal(done.status, 'completed', done.message);
    const answer = resultOf(await api.dispatch('models:predictFile', { modelId: done.modelId!, datasetId: opened.id, device: 'cpu' })) as PredictionFile;
    assert.deepEqual(answer.columns.slice(0, 4), ['row', 'file', 'predicted', 'label']);
    const files = answer.preview.map((row) => String(row[1]));
    assert.ok(files.every((file) => /^(one|two|zero)\/\d-\d+\.png$/.test(file)), `files: ${files.join(', ')}`);
    assert.ok(answer.preview.every((row) => String(row[1]).startsWith(`${row[3]}/`)), 'each image in the folder of its label');
  });
});
