// The UI API through dispatch(): validation errors as values, datasets, the model check, a training run
// with its events, evaluation and a save/import round trip.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createApi, type ApiEvent, type DatasetInfo, type DatasetPreview, type EvaluationResult, type ModelCheck, type ModelInfo, type RunInfo, type TrainingDone } from '../../../app/api';
import { loadModelFile } from '../../../app/services/models';
import { irisCsv, resultOf, within } from './helpers';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-api-test-'));
const api = createApi({ uploadDir: path.join(scratch, 'uploads') });
after(async () => {
  await api.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

async function openIris(): Promise<DatasetInfo> {
  return resultOf(await api.dispatch('datasets:open', { source: { kind: 'path', path: irisCsv } })) as DatasetInfo;
}

/** Collects events until training:done for `runId` arrives (bounded). */
function collectRun(runId: () => string | undefined, ms: number): { events: ApiEvent[]; done: Promise<TrainingDone> } {
  const events: ApiEvent[] = [];
  let unsubscribe = () => {};
  const done = new Promise<TrainingDone>((resolve) => {
    unsubscribe = api.subscribe((event) => {
      if (!('runId' in event.payload) || event.payload.runId !== runId()) return;
      events.push(event);
      if (event.event === 'training:done') resolve(event.payload);
    });
  });
  return { events, done: within(done, ms, 'training:done').finally(() => unsubscribe()) };
}

describe('dispatch validates at the gate', () => {
  test('an unknown channel is an error value', async () => {
    const response = await api.dispatch('datasets:delete-everything', {});
    assert.equal(response.result, undefined);
    assert.match(response.error?.message ?? '', /unknown channel "datasets:delete-everything"/);
  });

  test('a bad payload names the field', async () => {
    const response = await api.dispatch('datasets:open', { source: { kind: 'path', path: 42 } });
    assert.equal(response.error?.field, 'source.path');
    assert.match(response.error?.message ?? '', /^datasets:open: source\.path: /);

    const misspelt = await api.dispatch('training:start', { datasetId: 'dataset-1', epoch: 1 });
    assert.equal(misspelt.error?.field, 'epoch');

    const missing = await api.dispatch('training:status', undefined);
    assert.ok(missing.error, 'a missing payload is an error');
  });

  test("a service's error comes back as a value", async () => {
    const response = await api.dispatch('datasets:open', { source: { kind: 'path', path: path.join(scratch, 'missing.csv') } });
    assert.match(response.error?.message ?? '', /missing\.csv: no such file/);
    const unknownRun = await api.dispatch('training:pause', { runId: 'run-999' });
    assert.match(unknownRun.error?.message ?? '', /no training run with id "run-999"/);
    const unknownModel = await api.dispatch('models:download', { modelId: 'model-999' });
    assert.equal(unknownModel.result, undefined);
    assert.match(unknownModel.error?.message ?? '', /no model with id "model-999"/);
    assert.equal((await api.dispatch('models:download', { modelId: 'model-1', path: '/tmp/x' })).error?.field, 'path');
  });
});

describe('datasets', () => {
  test('datasets:open reads a CSV from a path, datasets:preview shows its first rows', async () => {
    const iris = await openIris();
    assert.equal(iris.kind, 'table');
    assert.equal(iris.count, 150);
    assert.deepEqual(iris.featureShape, [4]);
    assert.deepEqual(iris.classLabels, ['setosa', 'versicolor', 'virginica']);
    assert.deepEqual(iris.classCounts, [50, 50, 50]);

    const preview = resultOf(await api.dispatch('datasets:preview', { datasetId: iris.id, rows: 3 })) as DatasetPreview;
    assert.equal(preview.kind, 'table');
    if (preview.kind !== 'table') return;
    assert.deepEqual(preview.columns, ['sepal_length', 'sepal_width', 'petal_length', 'petal_width', 'species']);
    assert.deepEqual(preview.rows[0], ['5.1', '3.5', '1.4', '0.2', 'setosa']);
    assert.equal(preview.rows.length, 3);
  });

  test('datasets:open takes uploaded bytes and names the file in errors', async () => {
    const text = 'a,b,label\n1,2,x\n3,4,y\n5,6,x\n7,8,y\n';
    const opened = resultOf(
      await api.dispatch('datasets:open', { source: { kind: 'upload', fileName: 'tiny.csv', base64: Buffer.from(text).toString('base64') } }),
    ) as DatasetInfo;
    assert.equal(opened.name, 'tiny.csv');
    assert.equal(opened.count, 4);
    assert.deepEqual(opened.classLabels, ['x', 'y']);

    const broken = 'a,b,label\n1,"oops,x\n'; // an unclosed quote (a text cell alone is no longer an error)
    const response = await api.dispatch('datasets:open', { source: { kind: 'upload', fileName: 'broken.csv', base64: Buffer.from(broken).toString('base64') } });
    assert.match(response.error?.message ?? '', /broken\.csv/);
    assert.doesNotMatch(response.error?.message ?? '', /uploads/, 'the temporary path is not shown');

    const escape = await api.dispatch('datasets:open', { source: { kind: 'upload', fileName: '../evil.csv', base64: '' } });
    assert.equal(escape.error?.field, 'source.fileName');
  });

  test('datasets:open loads the built-in MNIST with a limit; the preview has images', async () => {
    const mnist = resultOf(await api.dispatch('datasets:open', { source: { kind: 'mnist', limit: 50 } })) as DatasetInfo;
    assert.equal(mnist.kind, 'images');
    assert.equal(mnist.count, 50);
    assert.deepEqual(mnist.featureShape, [1, 28, 28]);
    assert.equal(mnist.classLabels.length, 10);
    assert.equal(mnist.classCounts.reduce((a, b) => a + b, 0), 50);

    const preview = resultOf(await api.dispatch('datasets:preview', { datasetId: mnist.id, rows: 2 })) as DatasetPreview;
    assert.equal(preview.kind, 'images');
    if (preview.kind !== 'images') return;
    assert.equal(preview.images.length, 2);
    assert.equal(preview.images[0].pixels.length, 784);
    assert.ok(Math.max(...preview.images[0].pixels) > 200, 'pixels are on the 0-255 scale');
    assert.equal(preview.images[0].label, '5', "MNIST's first training image is a 5");
  });
});

describe('models', () => {
  test('models:presets lists the built-in presets', async () => {
    const presets = resultOf(await api.dispatch('models:presets', {})) as { name: string }[];
    assert.ok(presets.length > 0);
    assert.ok(presets.every((preset) => typeof preset.name === 'string' && preset.name.length > 0));
  });

  test('models:check gives every layer its shape, or the failing layer its error', async () => {
    const iris = await openIris();
    const valid = resultOf(await api.dispatch('models:check', { datasetId: iris.id, model: { layers: 'dense:8:relu,dense:3' } })) as ModelCheck;
    assert.equal(valid.ok, true);
    assert.deepEqual(valid.layers.map((layer) => layer.outputShape), [[8], [3]]);
    assert.equal(valid.totalParameters, 4 * 8 + 8 + 8 * 3 + 3);

    const image = { inputShape: [1, 4, 4], classCount: 3 };
    const invalid = resultOf(await api.dispatch('models:check', { ...image, model: { layers: 'conv:4x3:relu,conv:4x5,dense:3' } })) as ModelCheck;
    assert.equal(invalid.ok, false);
    assert.equal(invalid.error?.layerIndex, 1);
    assert.match(invalid.layers[1].error ?? '', /^Layer 2 \(convolution\): kernel 5x5 larger than input 2x2/);
    assert.equal(invalid.error?.itemIndex, 1);
    assert.deepEqual(invalid.layers[0].outputShape, [4, 2, 2], 'the layers before it keep their shapes');
    assert.equal(invalid.layers[2].outputShape, undefined);

    const wrongHead = resultOf(await api.dispatch('models:check', { datasetId: iris.id, model: { layers: 'dense:8:relu,dense:5' } })) as ModelCheck;
    assert.equal(wrongHead.ok, false);
    assert.match(wrongHead.layers[1].error ?? '', /predicts 5 classes but the data has 3/);

    // The editor's words, not the command line's: the layer by its number among the user's layers.
    const unreadable = resultOf(await api.dispatch('models:check', { datasetId: iris.id, model: { layers: 'dense:8:relu,dense:0:relu,dense:3' } })) as ModelCheck;
    assert.deepEqual(unreadable.error, { message: 'Layer 2 (dense): units must be at least 1', itemIndex: 1 });
    // An emptied number field reaches the text as "null".
    const empty = resultOf(await api.dispatch('models:check', { ...image, model: { layers: 'conv:nullx3:relu,dense:3' } })) as ModelCheck;
    assert.deepEqual(empty.error, { message: 'Layer 1 (convolution): filters and kernel size must be whole numbers of at least 1', itemIndex: 0 });
    const fraction = resultOf(await api.dispatch('models:check', { datasetId: iris.id, model: { layers: 'dense:1.5,dense:3' } })) as ModelCheck;
    assert.equal(fraction.error?.message, 'Layer 1 (dense): units must be a whole number of at least 1');
    // A flatten added before a dense layer is not one of the user's: the dense after it is still layer 3.
    const afterFlatten = resultOf(await api.dispatch('models:check', { ...image, model: { layers: 'conv:4x3,maxpool:2,dense:7' } })) as ModelCheck;
    assert.equal(afterFlatten.error?.message, 'Layer 3 (dense): the last layer predicts 7 classes but the data has 3: give it 3 units');
    assert.equal(afterFlatten.error?.layerIndex, 3);
    assert.equal(afterFlatten.error?.itemIndex, 2);

    const noData = await api.dispatch('models:check', { model: { layers: 'dense:3' } });
    assert.equal(noData.error?.field, 'datasetId');
  });
});

describe('training, evaluation and model files', () => {
  test('a short CPU run: progress events, training:done, evaluation, save and import', async () => {
    const iris = await openIris();
    let runId: string | undefined;
    const run = collectRun(() => runId, 60_000);
    const started = resultOf(
      await api.dispatch('training:start', {
        datasetId: iris.id,
        model: { layers: 'dense:8:relu,dense:3', lr: 0.01 },
        epochs: 2,
        batchSize: 16,
        device: 'cpu',
        threads: 1,
      }),
    ) as { runId: string };
    runId = started.runId;
    assert.match(runId, /^run-\d+$/);

    const done = await run.done;
    assert.equal(done.status, 'completed', done.message);
    assert.equal(done.history.length, 2);
    assert.ok(done.test && done.test.report.labels.length === 3, 'the test split was evaluated');
    assert.ok(done.modelId);

    const progress = run.events.filter((event) => event.event === 'training:progress').map((event) => event.payload as { type: string });
    assert.equal(progress[0]?.type, 'plan', 'the plan comes first');
    assert.equal(progress.filter((event) => event.type === 'epoch').length, 2);
    assert.equal(run.events[run.events.length - 1].event, 'training:done', 'training:done comes last');

    const status = resultOf(await api.dispatch('training:status', { runId })) as RunInfo;
    assert.equal(status.state, 'finished');
    assert.equal(status.outcome?.status, 'completed');
    const late = await api.dispatch('training:pause', { runId });
    assert.match(late.error?.message ?? '', /already finished/);

    const evaluation = resultOf(await api.dispatch('evaluation:evaluate', { modelId: done.modelId, datasetId: iris.id, device: 'cpu' })) as EvaluationResult;
    assert.equal(evaluation.count, 150);
    assert.equal(evaluation.predictions.length, 150);
    assert.ok(evaluation.confidences.every((p) => p > 0 && p <= 1));
    assert.equal(evaluation.report.confusion.flat().reduce((a, b) => a + b, 0), 150);

    const file = path.join(scratch, 'iris.nnstudio');
    const saved = resultOf(await api.dispatch('models:save', { modelId: done.modelId, path: file })) as { path: string; bytes: number };
    assert.equal(saved.path, file);
    assert.equal(saved.bytes, fs.statSync(file).size);

    const imported = resultOf(await api.dispatch('models:import', { source: { kind: 'path', path: file } })) as ModelInfo;
    assert.notEqual(imported.id, done.modelId);
    assert.deepEqual(imported.labels, ['setosa', 'versicolor', 'virginica']);
    assert.equal(imported.training?.history.length, 2);
    const again = resultOf(await api.dispatch('evaluation:evaluate', { modelId: imported.id, datasetId: iris.id, device: 'cpu' })) as EvaluationResult;
    assert.deepEqual(again.predictions, evaluation.predictions, 'the imported model predicts the same');

    const uploaded = resultOf(
      await api.dispatch('models:import', { source: { kind: 'upload', fileName: 'copy.nnstudio', base64: fs.readFileSync(file).toString('base64') } }),
    ) as ModelInfo;
    assert.equal(uploaded.parameterCount, imported.parameterCount);
    const corrupt = await api.dispatch('models:import', { source: { kind: 'upload', fileName: 'bad.nnstudio', base64: Buffer.from('not a model').toString('base64') } });
    assert.ok(corrupt.error, 'a corrupt model file is an error value');

    // models:download: the bytes models:save wrote, read back into the same spec and weights.
    const download = resultOf(await api.dispatch('models:download', { modelId: done.modelId })) as { fileName: string; base64: string };
    assert.equal(download.fileName, `${iris.name} (${runId}).safetensors`);
    const bytes = Buffer.from(download.base64, 'base64');
    assert.ok(bytes.equals(fs.readFileSync(file)), 'the same bytes as models:save');
    const downloadedFile = path.join(scratch, download.fileName);
    fs.writeFileSync(downloadedFile, bytes);
    const [fromDownload, fromSave] = await Promise.all([loadModelFile(downloadedFile), loadModelFile(file)]);
    assert.deepEqual(fromDownload.spec, fromSave.spec);
    assert.deepEqual(fromDownload.parameters, fromSave.parameters);
    assert.deepEqual(fromDownload.preprocessing, fromSave.preprocessing);
    const reimported = resultOf(
      await api.dispatch('models:import', { source: { kind: 'upload', fileName: download.fileName, base64: download.base64 } }),
    ) as ModelInfo;
    assert.deepEqual(reimported.spec, imported.spec);
    assert.equal(reimported.name, download.fileName);
    const third = resultOf(await api.dispatch('evaluation:evaluate', { modelId: reimported.id, datasetId: iris.id, device: 'cpu' })) as EvaluationResult;
    assert.deepEqual(third.predictions, evaluation.predictions, 'the downloaded model predicts the same');
    const renamed = resultOf(await api.dispatch('models:download', { modelId: reimported.id })) as { fileName: string };
    assert.equal(renamed.fileName, download.fileName, 'an imported .safetensors keeps its name');
  });

  test('a run can be paused, resumed and cancelled', async () => {
    const mnist = resultOf(await api.dispatch('datasets:open', { source: { kind: 'mnist', limit: 2000 } })) as DatasetInfo;
    let runId: string | undefined;
    const run = collectRun(() => runId, 60_000);
    runId = (resultOf(
      await api.dispatch('training:start', { datasetId: mnist.id, model: { layers: 'dense:32:relu,dense:10' }, epochs: 1000, batchSize: 32, device: 'cpu', threads: 1, testSplit: 0.1 }),
    ) as { runId: string }).runId;
    const paused = resultOf(await api.dispatch('training:pause', { runId })) as RunInfo;
    assert.ok(paused.state === 'paused' || paused.state === 'starting', `state ${paused.state}`);
    const resumed = resultOf(await api.dispatch('training:resume', { runId })) as RunInfo;
    assert.notEqual(resumed.state, 'paused');
    const cancelled = resultOf(await api.dispatch('training:cancel', { runId })) as RunInfo;
    assert.equal(cancelled.state, 'cancelling');
    const done = await run.done;
    assert.equal(done.status, 'cancelled');
    assert.ok(done.history.length < 1000);
  });

  test('training:start takes GPUs; several on the CPU are refused with the reason', async () => {
    const iris = await openIris();
    const onCpu = await api.dispatch('training:start', { datasetId: iris.id, device: 'cpu', gpus: [0, 1] });
    assert.match(onCpu.error?.message ?? '', /several GPUs need the CUDA device/);
    const twice = await api.dispatch('training:start', { datasetId: iris.id, gpus: [1, 1] });
    assert.match(twice.error?.message ?? '', /lists a GPU twice/);
    const none = await api.dispatch('training:start', { datasetId: iris.id, gpus: 0 });
    assert.ok(none.error, 'a count of 0 GPUs is refused');
  });

  test('training:start answers a model error at once', async () => {
    const iris = await openIris();
    const response = await api.dispatch('training:start', { datasetId: iris.id, model: { layers: 'dense:8,dense:4' } });
    assert.match(response.error?.message ?? '', /predicts 4 classes but the data has 3/);
  });
});
