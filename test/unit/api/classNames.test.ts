// The Data screen's class names and IDX test pair through the UI API: datasets:setClassNames, an uploaded IDX
// pair with its own test pair, a run whose test report names the classes; and no temporary path in a message.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createApi, type ApiEvent, type DatasetInfo, type DatasetPreview, type ProjectOpened, type SplitPlan, type TrainingDone } from '../../../app/api';
import { SessionFolder } from '../../../app/api/registries/sessionFolder';
import { encodeIdx } from '../../../app/core/data/idx';
import { irisCsv, resultOf, within } from './helpers';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-api-classnames-'));
const uploadDir = path.join(scratch, 'uploads');
const api = createApi({ uploadDir, runHistory: false });
after(async () => {
  await api.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

/** `count` 4x4 images; class k (label value k) lights row k. */
function idxPair(count: number, prefix: string, labelCount = count): { fileName: string; base64: string; labels: { fileName: string; base64: string } } {
  const labels = Uint8Array.from({ length: labelCount }, (_, i) => i % 3);
  const pixels = new Uint8Array(count * 16);
  for (let n = 0; n < count; n++) pixels.fill(255, n * 16 + (n % 3) * 4, n * 16 + (n % 3) * 4 + 4);
  return {
    fileName: `${prefix}-images-idx3-ubyte`,
    base64: base64(encodeIdx([count, 4, 4], pixels)),
    labels: { fileName: `${prefix}-labels-idx1-ubyte`, base64: base64(encodeIdx([labelCount], labels)) },
  };
}

function openWithTestPair(testCount = 9, testLabels = testCount) {
  const train = idxPair(60, 'rows');
  const testPair = idxPair(testCount, 'rows-test', testLabels);
  return api.dispatch('datasets:open', {
    source: { kind: 'upload', ...train, test: { images: { fileName: testPair.fileName, base64: testPair.base64 }, labels: testPair.labels } },
  });
}

describe('an uploaded IDX pair with its test pair', () => {
  test('the test pair is the dataset\'s separate test set, named as uploaded', async () => {
    const opened = resultOf(await openWithTestPair()) as DatasetInfo;
    assert.deepEqual(opened.testPair, { name: 'rows-test-images-idx3-ubyte', count: 9 });
    assert.equal(opened.namesClasses, true);
    const listed = resultOf(await api.dispatch('datasets:list', {})) as DatasetInfo[];
    assert.equal(listed.filter((info) => info.name.startsWith('rows-test')).length, 0, 'the test pair is no dataset of its own');
    const plan = resultOf(await api.dispatch('datasets:split', { datasetId: opened.id, valSplit: 0.1, testSplit: 0.3 })) as SplitPlan;
    assert.deepEqual(plan, { trainCount: 54, validationCount: 6, testCount: 9, separateTest: 'rows-test-images-idx3-ubyte' });
  });

  test('a test pair that does not match is reported by the names sent, and nothing stays', async () => {
    const response = await openWithTestPair(9, 8);
    assert.equal(response.error?.message, 'rows-test-images-idx3-ubyte: has 9 images but rows-test-labels-idx1-ubyte has 8 labels');
    assert.ok(!response.error?.message.includes(uploadDir));
  });
});

describe('datasets:setClassNames', () => {
  test('names the classes in the preview, and a run trained afterwards reports them', async () => {
    const opened = resultOf(await openWithTestPair()) as DatasetInfo;
    const named = resultOf(await api.dispatch('datasets:setClassNames', { datasetId: opened.id, classNames: ['top', ' middle', 'bottom'] })) as DatasetInfo;
    assert.deepEqual(named.classLabels, ['top', 'middle', 'bottom']);
    const listed = resultOf(await api.dispatch('datasets:list', {})) as DatasetInfo[];
    assert.deepEqual(listed.find((info) => info.id === opened.id)?.classLabels, ['top', 'middle', 'bottom']);
    const preview = resultOf(await api.dispatch('datasets:preview', { datasetId: opened.id, rows: 3 })) as DatasetPreview;
    assert.equal(preview.kind, 'images');
    if (preview.kind === 'images') assert.deepEqual(preview.images.map((image) => image.label), ['top', 'middle', 'bottom']);

    const done = new Promise<TrainingDone>((resolve) => {
      const stop = api.subscribe((event: ApiEvent) => {
        if (event.event === 'training:done') {
          stop();
          resolve(event.payload);
        }
      });
    });
    resultOf(await api.dispatch('training:start', { datasetId: opened.id, model: { layers: 'dense:3', lr: 0.1 }, epochs: 3, device: 'cpu' }));
    const outcome = await within(done, 60_000, 'training:done');
    assert.equal(outcome.status, 'completed', outcome.message);
    assert.deepEqual(outcome.test?.report.labels, ['top', 'middle', 'bottom']);
    assert.equal(outcome.plan?.testCount, 9, 'tested on the test pair');
  });

  test('wrong names are refused with the reason; a CSV\'s classes are not renamed here', async () => {
    const opened = resultOf(await openWithTestPair()) as DatasetInfo;
    const tooFew = await api.dispatch('datasets:setClassNames', { datasetId: opened.id, classNames: ['a', 'b'] });
    assert.equal(tooFew.error?.message, 'rows-images-idx3-ubyte: 3 class names needed (one per class), got 2 (classes now: 0, 1, 2)');
    const twice = await api.dispatch('datasets:setClassNames', { datasetId: opened.id, classNames: ['a', 'b', 'a'] });
    assert.match(twice.error?.message ?? '', /classes 1 and 3 are both named "a"/);
    const empty = await api.dispatch('datasets:setClassNames', { datasetId: opened.id, classNames: ['a', ' ', 'c'] });
    assert.equal(empty.error?.field, 'classNames.1');
    const iris = resultOf(await api.dispatch('datasets:open', { source: { kind: 'path', path: irisCsv } })) as DatasetInfo;
    assert.equal(iris.namesClasses, undefined);
    const csv = await api.dispatch('datasets:setClassNames', { datasetId: iris.id, classNames: ['a', 'b', 'c'] });
    assert.match(csv.error?.message ?? '', /a CSV's classes are the values of its label column/);
  });
});

describe('messages name the session\'s files as the user knows them', () => {
  test('uploads by the name sent, other files (checkpoints) without their folder', async () => {
    const folder = new SessionFolder(path.join(scratch, 'named'));
    const upload = await folder.writeUpload('fashion-images.idx3', '');
    const checkpoint = await folder.checkpointFile('run-1');
    assert.equal(folder.showNames(`${upload}: has 9 images`), 'fashion-images.idx3: has 9 images');
    assert.equal(folder.showNames(`${checkpoint}: the run has already trained 2 of 2 epochs`), 'run-1.checkpoint.safetensors: the run has already trained 2 of 2 epochs');
    assert.equal(folder.showNames(`cannot read ${path.join(scratch, 'named', 'other.bin')}: gone`), 'cannot read other.bin: gone');
  });
});

describe('a project keeps the class names and the test pair', () => {
  test('saved and opened in a new session: the names, the test pair copied beside the project', async () => {
    const opened = resultOf(await openWithTestPair()) as DatasetInfo;
    resultOf(await api.dispatch('datasets:setClassNames', { datasetId: opened.id, classNames: ['top', 'middle', 'bottom'] }));
    const projectFile = path.join(scratch, 'rows.nnstudio');
    resultOf(await api.dispatch('projects:save', { path: projectFile }));
    const saved = JSON.parse(fs.readFileSync(projectFile, 'utf8')) as { datasets: { source: { test?: { imagesPath: string } } }[] };
    const testPaths = saved.datasets.flatMap((entry) => (entry.source.test ? [entry.source.test.imagesPath] : []));
    assert.ok(testPaths.length > 0 && testPaths.every((file) => !file.startsWith(uploadDir) && fs.existsSync(path.resolve(path.dirname(projectFile), file))), `test pairs copied: ${testPaths.join(', ')}`);

    const second = createApi({ uploadDir: path.join(scratch, 'uploads-2'), runHistory: false });
    try {
      const reopened = resultOf(await second.dispatch('projects:open', { path: projectFile })) as ProjectOpened;
      assert.deepEqual(reopened.notes, []);
      const listed = resultOf(await second.dispatch('datasets:list', {})) as DatasetInfo[];
      const rows = listed.find((info) => info.name === 'rows-images-idx3-ubyte' && info.classLabels[0] === 'top');
      assert.ok(rows, `the named dataset among ${JSON.stringify(listed.map((info) => [info.name, info.classLabels]))}`);
      assert.deepEqual(rows.classLabels, ['top', 'middle', 'bottom']);
      assert.equal(rows.testPair?.count, 9);
    } finally {
      await second.close();
    }
  });
});
