// Image folders through the UI API (issue 15): a folder by its path (serve, the desktop app) and a dropped
// folder's files uploaded with their paths; the per-class preview in colour; training, a confusion cell's
// examples in colour, and models:predict with an uploaded image decoded like the training images.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createApi, type CellExamples, type DatasetInfo, type DatasetPreview, type PredictionResult, type TrainingDone } from '../../../app/api';
import { writeDigitFolder } from '../../support/imageFolder';
import { resultOf, within } from './helpers';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-imagefolders-api-'));
const api = createApi({ uploadDir: path.join(scratch, 'uploads'), runHistory: false });
const root = path.join(scratch, 'digits');
after(async () => {
  await api.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});
before(async () => {
  await writeDigitFolder(root, { perClass: 20, formats: ['png', 'jpeg', 'bmp'] });
  fs.writeFileSync(path.join(root, 'one', 'corrupt.png'), 'not a PNG');
});

/** Every file of a folder as a dropped folder's upload: its path inside and its bytes. */
function folderFiles(folder: string): { path: string; base64: string }[] {
  const files: { path: string; base64: string }[] = [];
  const walk = (relative: string): void => {
    for (const entry of fs.readdirSync(path.join(folder, relative), { withFileTypes: true })) {
      const inner = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(inner);
      else files.push({ path: inner, base64: fs.readFileSync(path.join(folder, inner)).toString('base64') });
    }
  };
  walk('');
  return files;
}

async function train(datasetId: string): Promise<TrainingDone> {
  let runId: string | undefined;
  const done = new Promise<TrainingDone>((resolve) => {
    const unsubscribe = api.subscribe((event) => {
      if (event.event === 'training:done' && event.payload.runId === runId) {
        unsubscribe();
        resolve(event.payload);
      }
    });
  });
  runId = (resultOf(await api.dispatch('training:start', {
    datasetId, model: { layers: 'conv:8x3:relu,maxpool:2,dense:3', lr: 0.01 }, epochs: 3, batchSize: 16, device: 'cpu', threads: 1, testSplit: 0.25,
  })) as { runId: string }).runId;
  const outcome = await within(done, 120_000, 'training:done');
  assert.equal(outcome.status, 'completed', outcome.message);
  return outcome;
}

describe('image folders through the API', () => {
  let opened: DatasetInfo;

  test('a folder by its path: classes, [3,H,W], the corrupt file in the notes', async () => {
    opened = resultOf(await api.dispatch('datasets:open', { source: { kind: 'path', path: root, image: { size: [24, 24] } } })) as DatasetInfo;
    assert.equal(opened.kind, 'images');
    assert.deepEqual(opened.classLabels, ['one', 'two', 'zero']);
    assert.deepEqual(opened.featureShape, [3, 24, 24]);
    assert.deepEqual(opened.classCounts, [20, 20, 20]);
    assert.equal(opened.namesClasses, true);
    assert.match((opened.notes ?? []).join('\n'), /1 of 61 images could not be decoded and were skipped: one\/corrupt\.png/);
  });

  test('the preview gives the first images of each class, in colour', async () => {
    const preview = resultOf(await api.dispatch('datasets:preview', { datasetId: opened.id, perClass: 3 })) as DatasetPreview;
    assert.equal(preview.kind, 'images');
    if (preview.kind !== 'images') return;
    assert.deepEqual(preview.images.map((image) => image.label), ['one', 'one', 'one', 'two', 'two', 'two', 'zero', 'zero', 'zero']);
    assert.deepEqual(preview.images[0].shape, [3, 24, 24]);
    const plane = 24 * 24;
    const channelSums = [0, 1, 2].map((c) => preview.images[0].pixels.slice(c * plane, (c + 1) * plane).reduce((a, b) => a + b, 0));
    assert.ok(channelSums[0] > 2 * channelSums[1], `the first image is tinted red: ${channelSums}`);
  });

  test('a dropped folder uploaded as files with their paths reads the same', async () => {
    const uploaded = resultOf(await api.dispatch('datasets:open', {
      source: { kind: 'folder', name: 'digits', files: folderFiles(root), image: { size: [24, 24] } },
    })) as DatasetInfo;
    assert.equal(uploaded.name, 'digits');
    assert.equal(uploaded.description, 'digits (uploaded)', 'named as chosen, not by the session\'s temporary folder');
    assert.deepEqual(uploaded.classLabels, opened.classLabels);
    assert.deepEqual(uploaded.classCounts, opened.classCounts);
    assert.match((uploaded.notes ?? []).join('\n'), /one\/corrupt\.png/);
    const escape = await api.dispatch('datasets:open', { source: { kind: 'folder', name: 'x', files: [{ path: '../evil.png', base64: '' }] } });
    assert.match(escape.error?.message ?? '', /must be a relative path of names separated by "\/"/);
    const file = await api.dispatch('datasets:open', { source: { kind: 'path', path: path.join(root, 'one', fs.readdirSync(path.join(root, 'one'))[0]), image: { fit: 'letterbox' } } });
    assert.match(file.error?.message ?? '', /is not a folder, so image options do not apply/);
  });

  test('trains; a confusion cell shows colour images; an uploaded image is predicted as the training images were read', async () => {
    const outcome = await train(opened.id);
    assert.ok(outcome.modelId && outcome.evaluationId);
    const confusion = outcome.test!.report.confusion;
    const predictedForOne = confusion[0].findIndex((count) => count > 0);
    const cell = resultOf(await api.dispatch('evaluation:examples', { evaluationId: outcome.evaluationId, actual: 0, predicted: predictedForOne })) as CellExamples;
    assert.equal(cell.total, confusion[0][predictedForOne]);
    assert.equal(cell.kind, 'images');
    assert.deepEqual(cell.shape, [3, 24, 24]);
    assert.equal(cell.examples[0].pixels?.length, 3 * 24 * 24);

    const image = fs.readFileSync(path.join(root, 'zero', fs.readdirSync(path.join(root, 'zero'))[0])).toString('base64');
    const predicted = resultOf(await api.dispatch('models:predict', { modelId: outcome.modelId, image: { fileName: 'zero.png', base64: image } })) as PredictionResult;
    assert.deepEqual(predicted.classLabels, ['one', 'two', 'zero']);
    assert.equal(predicted.probabilities[0].length, 3);
    assert.deepEqual(predicted.input?.shape, [3, 24, 24]);
    assert.equal(predicted.input?.pixels.length, 3 * 24 * 24);

    const broken = await api.dispatch('models:predict', { modelId: outcome.modelId, image: { fileName: 'broken.png', base64: Buffer.from('nope').toString('base64') } });
    assert.match(broken.error?.message ?? '', /^broken\.png cannot be read as an image: /);
    const both = await api.dispatch('models:predict', { modelId: outcome.modelId });
    assert.match(both.error?.message ?? '', /give inputs or image/);
  });
});
