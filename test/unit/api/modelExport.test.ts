// The UI API's model export and course-file import: models:export (ONNX as base64 and a file name),
// models:save with format 'onnx' (the same bytes, written where the save dialog said), models:import of a
// course tool model.m by path or upload, and its errors naming the uploaded file and the line.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as ort from 'onnxruntime-node';
import { createApi, type ModelInfo, type PredictionResult } from '../../../app/api';
import { saveModel } from '../../../app/core/model/modelFile';
import * as engine from '../../../app/engine';
import type { TrainedModel } from '../../../app/services';
import { resultOf } from './helpers';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-api-export-'));
const api = createApi({ uploadDir: path.join(scratch, 'uploads') });
after(async () => {
  await api.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

const courseText = '3\n2 3 2\n0.1 -0.2 0.3\n0.5 -0.5\n1 2\n-1 0.5\n0.25 -0.75\n1 -1 0.5\n-2 1 1\n';

describe('models:export and models:save as ONNX', () => {
  test('a z-score model: the ONNX export in onnxruntime gives models:predict\'s probabilities', async () => {
    const spec = {
      input: [4] as [number],
      layers: [{ kind: 'dense' as const, units: 6, activation: 'tanh' as const }, { kind: 'dense' as const, units: 3 }],
      loss: 'softmax_cross_entropy' as const,
      optimizer: { kind: 'adam' as const, lr: 0.001 },
      seed: 3,
    };
    const model: TrainedModel = {
      spec,
      parameters: engine.initialParameters(spec),
      labels: ['setosa', 'versicolor', 'virginica'],
      featureNames: ['a', 'b', 'c', 'd'],
      inputShape: [4],
      preprocessing: { kind: 'zscore', featureCount: 4, mean: [5.8, 3, 3.7, 1.2], std: [0.8, 0.4, 1.7, 0.76] },
    };
    const file = path.join(scratch, 'iris run.safetensors');
    await saveModel(file, model);
    const imported = resultOf(await api.dispatch('models:import', { source: { kind: 'path', path: file } })) as ModelInfo;

    const exported = resultOf(await api.dispatch('models:export', { modelId: imported.id, format: 'onnx' })) as { fileName: string; base64: string };
    assert.equal(exported.fileName, 'iris run.onnx');
    const bytes = Buffer.from(exported.base64, 'base64');
    const rows = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.1, 4.4, 1.4], [6.3, 3.3, 6, 2.5]];
    const session = await ort.InferenceSession.create(bytes);
    const output = await session.run({ input: new ort.Tensor('float32', Float32Array.from(rows.flat()), [3, 4]) });
    await session.release();
    const predicted = resultOf(await api.dispatch('models:predict', { modelId: imported.id, inputs: rows, device: 'cpu' })) as PredictionResult;
    const probabilities = output.probabilities.data as Float32Array;
    predicted.probabilities.flat().forEach((value, i) => assert.ok(Math.abs(value - probabilities[i]) <= 1e-5, `${i}: ${value} vs ${probabilities[i]}`));

    const target = path.join(scratch, 'out.onnx');
    const saved = resultOf(await api.dispatch('models:save', { modelId: imported.id, path: target, format: 'onnx' })) as { path: string; bytes: number };
    assert.equal(saved.bytes, bytes.length);
    assert.ok(fs.readFileSync(target).equals(bytes), 'models:save writes the bytes models:export answers');
  });

  test('the payload is validated: an unknown format names the field', async () => {
    const response = await api.dispatch('models:export', { modelId: 'model-1', format: 'pmml' });
    assert.equal(response.error?.field, 'format');
    const unknown = await api.dispatch('models:export', { modelId: 'model-999', format: 'onnx' });
    assert.match(unknown.error?.message ?? '', /no model with id "model-999"/);
  });
});

describe('models:import reads the course tool\'s model.m', () => {
  test('by path and by upload (by extension), as a sigmoid MLP', async () => {
    const file = path.join(scratch, 'model.m');
    fs.writeFileSync(file, courseText);
    const byPath = resultOf(await api.dispatch('models:import', { source: { kind: 'path', path: file } })) as ModelInfo;
    assert.deepEqual(byPath.labels, ['0', '1']);
    assert.deepEqual(byPath.spec.layers.map((layer) => layer.kind === 'dense' && [layer.units, layer.activation]), [[3, 'sigmoid'], [2, 'sigmoid']]);
    const uploaded = resultOf(await api.dispatch('models:import', { source: { kind: 'upload', fileName: 'net.m', base64: Buffer.from(courseText).toString('base64') } })) as ModelInfo;
    assert.equal(uploaded.parameterCount, 17);
    const predicted = resultOf(await api.dispatch('models:predict', { modelId: uploaded.id, inputs: [[1, 2]], device: 'cpu' })) as PredictionResult;
    const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
    const hidden = [sigmoid(1 + 4 + 0.1), sigmoid(-1 + 1 - 0.2), sigmoid(0.25 - 1.5 + 0.3)];
    const out = [sigmoid(hidden[0] - hidden[1] + 0.5 * hidden[2] + 0.5), sigmoid(-2 * hidden[0] + hidden[1] + hidden[2] - 0.5)];
    out.forEach((value, k) => assert.ok(Math.abs(predicted.probabilities[0][k] - value) <= 1e-6));
    const download = resultOf(await api.dispatch('models:download', { modelId: uploaded.id })) as { fileName: string };
    assert.equal(download.fileName, 'net.safetensors');
  });

  test('a bad upload names the uploaded file and the line', async () => {
    const bad = courseText.replace('-2 1 1', '-2 1');
    const response = await api.dispatch('models:import', { source: { kind: 'upload', fileName: 'broken.m', base64: Buffer.from(bad).toString('base64') } });
    assert.match(response.error?.message ?? '', /^broken\.m: line 9: the file ends before weight 3 of 3 into unit 2 of layer 2: file truncated\?$/);
  });
});
