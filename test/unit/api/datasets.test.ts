// The Data screen's side of the UI API: CSV column roles through an upload, an uploaded IDX pair, data
// errors that point at a row and column, and datasets:split's live counts.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { createApi, type DatasetInfo, type DatasetPreview, type SplitPlan } from '../../../app/api';
import { encodeIdx } from '../../../app/core/data/idx';
import { irisCsv, resultOf } from './helpers';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-api-datasets-'));
const uploadDir = path.join(scratch, 'uploads');
const api = createApi({ uploadDir });
after(async () => {
  await api.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

const base64 = (bytes: Buffer | string) => Buffer.from(bytes).toString('base64');
const uploadedNames = () => (fs.existsSync(uploadDir) ? fs.readdirSync(uploadDir) : []);

/** `count` images of 3x2 pixels (image n is all n*10) and labels n % 3 + 1 (classes "1" "2" "3"). */
function idxPair(count: number, labelCount = count): { images: Buffer; labels: Buffer } {
  const pixels = new Uint8Array(count * 6);
  for (let n = 0; n < count; n++) pixels.fill(n * 10, n * 6, (n + 1) * 6);
  const labels = Uint8Array.from({ length: labelCount }, (_, n) => (n % 3) + 1);
  return { images: encodeIdx([count, 3, 2], pixels), labels: encodeIdx([labelCount], labels) };
}

describe('CSV column roles through an upload', () => {
  test('string labels, an ignored column and a categorical column give the expected features and classes', async () => {
    const text = [
      'id,colour,size,weight,species',
      '1,red,1.5,10,apple',
      '2,green,2.5,20,pear',
      '3,red,3.5,30,apple',
      '4,yellow,4.5,40,banana',
      '5,green,5.5,50,pear',
    ].join('\n');
    // What the Data screen sends: roles by 0-based column index, header and delimiter as it read them.
    const opened = resultOf(
      await api.dispatch('datasets:open', {
        source: {
          kind: 'upload',
          fileName: 'fruit.csv',
          base64: base64(text),
          csv: { labelColumn: 4, ignoreColumns: [0], categorical: [1], header: true, delimiter: ',' },
        },
      }),
    ) as DatasetInfo;
    assert.equal(opened.kind, 'table');
    assert.equal(opened.count, 5);
    // colour one-hot (green, red, yellow), then size and weight; id and species are not features.
    assert.deepEqual(opened.featureNames, ['colour=green', 'colour=red', 'colour=yellow', 'size', 'weight']);
    assert.deepEqual(opened.featureShape, [5]);
    assert.deepEqual(opened.classLabels, ['apple', 'banana', 'pear']);
    assert.deepEqual(opened.classCounts, [2, 1, 2]);

    const byName = resultOf(
      await api.dispatch('datasets:open', {
        source: { kind: 'upload', fileName: 'fruit.csv', base64: base64(text), csv: { labelColumn: 'species', ignoreColumns: ['id'], categorical: ['colour'] } },
      }),
    ) as DatasetInfo;
    assert.deepEqual(byName.featureNames, opened.featureNames, 'names and indices pick the same columns');
  });

  test('a text cell in a feature column is an error naming the upload, its row and its column', async () => {
    // A pixel CSV (image shape) needs every feature cell to be a number; elsewhere a rare text cell is missing.
    const text = 'a,b,label\n1,2,x\n3,oops,y\n';
    const response = await api.dispatch('datasets:open', { source: { kind: 'upload', fileName: 'broken.csv', base64: base64(text), csv: { labelColumn: 2, imageShape: [1, 1, 2] } } });
    assert.match(response.error?.message ?? '', /^broken\.csv, row 3, column "b" \(2\): "oops" is not a number/);
    assert.equal(response.error?.row, 3);
    assert.equal(response.error?.column, 2);
    assert.deepEqual(uploadedNames().filter((name) => name.endsWith('broken.csv')), [], 'a failed upload is removed');
  });
});

describe('an uploaded IDX pair', () => {
  test('the images file and its labels file (gzipped) open as one image dataset', async () => {
    const pair = idxPair(7);
    const opened = resultOf(
      await api.dispatch('datasets:open', {
        source: {
          kind: 'upload',
          fileName: 'tiny-images-idx3-ubyte',
          base64: base64(pair.images),
          labels: { fileName: 'tiny-labels-idx1-ubyte.gz', base64: base64(zlib.gzipSync(pair.labels)) },
        },
      }),
    ) as DatasetInfo;
    assert.equal(opened.name, 'tiny-images-idx3-ubyte');
    assert.equal(opened.kind, 'images');
    assert.equal(opened.count, 7);
    assert.deepEqual(opened.featureShape, [1, 3, 2]);
    assert.deepEqual(opened.classLabels, ['1', '2', '3']);
    assert.deepEqual(opened.classCounts, [3, 2, 2]);

    const preview = resultOf(await api.dispatch('datasets:preview', { datasetId: opened.id, rows: 3 })) as DatasetPreview;
    assert.equal(preview.kind, 'images');
    if (preview.kind === 'images') {
      assert.deepEqual(preview.images.map((image) => image.label), ['1', '2', '3']);
      assert.deepEqual(preview.images[2].pixels, [20, 20, 20, 20, 20, 20]);
    }

    const kept = uploadedNames();
    assert.equal(kept.filter((name) => /tiny-(images|labels)/.test(name)).length, 2, 'both files stay while the dataset is open');
    resultOf(await api.dispatch('datasets:close', { datasetId: opened.id }));
    assert.deepEqual(uploadedNames().filter((name) => /tiny-(images|labels)/.test(name)), [], 'closing removes both');
  });

  test('a labels file that does not match names both files as the user sent them', async () => {
    const pair = idxPair(5, 4);
    const response = await api.dispatch('datasets:open', {
      source: { kind: 'upload', fileName: 'a-images.idx3', base64: base64(pair.images), labels: { fileName: 'a-labels.idx1', base64: base64(pair.labels) } },
    });
    assert.equal(response.error?.message, 'a-images.idx3: has 5 images but a-labels.idx1 has 4 labels');
    assert.deepEqual(uploadedNames().filter((name) => name.includes('a-images') || name.includes('a-labels')), []);
  });

  test('a labels file with a CSV is refused', async () => {
    const response = await api.dispatch('datasets:open', {
      source: { kind: 'upload', fileName: 'iris.csv', base64: base64(fs.readFileSync(irisCsv)), labels: { fileName: 'labels.idx1', base64: base64(idxPair(3).labels) } },
    });
    assert.match(response.error?.message ?? '', /iris\.csv is not an IDX images file, so it takes no labels file/);
  });

  test('a bad labels payload is rejected naming the field', async () => {
    const images = base64(idxPair(3).images);
    const notBase64 = await api.dispatch('datasets:open', {
      source: { kind: 'upload', fileName: 'x-images.idx3', base64: images, labels: { fileName: 'x-labels.idx1', base64: 'not base64!' } },
    });
    assert.equal(notBase64.error?.field, 'source.labels.base64');
    assert.match(notBase64.error?.message ?? '', /^datasets:open: source\.labels\.base64: must be base64/);

    const folder = await api.dispatch('datasets:open', {
      source: { kind: 'upload', fileName: 'x-images.idx3', base64: images, labels: { fileName: '../x-labels.idx1', base64: '' } },
    });
    assert.equal(folder.error?.field, 'source.labels.fileName');

    const extra = await api.dispatch('datasets:open', {
      source: { kind: 'upload', fileName: 'x-images.idx3', base64: images, labels: { fileName: 'x-labels.idx1', base64: '', path: '/etc/passwd' } },
    });
    assert.equal(extra.error?.field, 'source.labels.path');
  });
});

describe('datasets:split', () => {
  test('counts the stratified split training:start would make', async () => {
    const iris = resultOf(await api.dispatch('datasets:open', { source: { kind: 'path', path: irisCsv } })) as DatasetInfo;
    const defaults = resultOf(await api.dispatch('datasets:split', { datasetId: iris.id })) as SplitPlan;
    assert.deepEqual(defaults, { trainCount: 105, validationCount: 15, testCount: 30 });
    const noTest = resultOf(await api.dispatch('datasets:split', { datasetId: iris.id, valSplit: 0.2, testSplit: 0 })) as SplitPlan;
    assert.deepEqual(noTest, { trainCount: 120, validationCount: 30, testCount: 0 });

    const tooMuch = await api.dispatch('datasets:split', { datasetId: iris.id, valSplit: 0.5, testSplit: 0.6 });
    assert.match(tooMuch.error?.message ?? '', /leave nothing for training/);
    const outOfRange = await api.dispatch('datasets:split', { datasetId: iris.id, valSplit: 1 });
    assert.equal(outOfRange.error?.field, 'valSplit');
    const unknown = await api.dispatch('datasets:split', { datasetId: 'dataset-999' });
    assert.match(unknown.error?.message ?? '', /no dataset with id "dataset-999"/);
  });

  test("MNIST tests on its test half, whatever the test share", async () => {
    const mnist = resultOf(await api.dispatch('datasets:open', { source: { kind: 'mnist', limit: 200 } })) as DatasetInfo;
    const plan = resultOf(await api.dispatch('datasets:split', { datasetId: mnist.id, valSplit: 0.1, testSplit: 0.3 })) as SplitPlan;
    assert.equal(plan.trainCount, 180);
    assert.equal(plan.validationCount, 20);
    assert.equal(plan.testCount, 10000);
    assert.match(plan.separateTest ?? '', /MNIST \(10 000 test images\)/);
  });
});
