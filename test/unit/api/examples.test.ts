// evaluation:examples (the examples behind a confusion-matrix cell, by confidence) and models:predict
// (class probabilities for rows a face sends, e.g. the digit canvas), through dispatch().
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createApi, type CellExamples, type DatasetInfo, type DatasetPreview, type EvaluationResult, type PredictionResult, type TrainingDone } from '../../../app/api';
import { irisCsv, resultOf, within } from './helpers';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-examples-test-'));
const api = createApi({ uploadDir: path.join(scratch, 'uploads') });
after(async () => {
  await api.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

const argmax = (values: readonly number[]) => values.reduce((best, value, i) => (value > values[best] ? i : best), 0);
const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

async function train(datasetId: string, layers: string): Promise<TrainingDone> {
  let runId: string | undefined;
  const done = new Promise<TrainingDone>((resolve) => {
    const unsubscribe = api.subscribe((event) => {
      if (event.event === 'training:done' && event.payload.runId === runId) {
        unsubscribe();
        resolve(event.payload);
      }
    });
  });
  runId = (resultOf(
    await api.dispatch('training:start', { datasetId, model: { layers, lr: 0.01 }, epochs: 1, batchSize: 32, device: 'cpu', threads: 1, testSplit: 0.2 }),
  ) as { runId: string }).runId;
  const outcome = await within(done, 120_000, 'training:done');
  assert.equal(outcome.status, 'completed', outcome.message);
  return outcome;
}

/** The cell of the confusion matrix with the most examples off the diagonal (or the fullest diagonal one). */
function busiestCell(confusion: number[][], offDiagonal: boolean): { actual: number; predicted: number; count: number } {
  let best = { actual: 0, predicted: 0, count: -1 };
  confusion.forEach((row, actual) =>
    row.forEach((count, predicted) => {
      if ((actual !== predicted) === offDiagonal && count > best.count) best = { actual, predicted, count };
    }),
  );
  return best;
}

describe('evaluation:examples and models:predict on images', () => {
  let model: TrainingDone;
  let data: DatasetInfo;
  let evaluation: EvaluationResult;
  let preview: Extract<DatasetPreview, { kind: 'images' }>;

  before(async () => {
    const training = resultOf(await api.dispatch('datasets:open', { source: { kind: 'mnist', limit: 1000 } })) as DatasetInfo;
    model = await train(training.id, 'dense:32:relu,dense:10');
    data = resultOf(await api.dispatch('datasets:open', { source: { kind: 'mnist', split: 'test', limit: 200 } })) as DatasetInfo;
    evaluation = resultOf(await api.dispatch('evaluation:evaluate', { modelId: model.modelId, datasetId: data.id, device: 'cpu' })) as EvaluationResult;
    preview = resultOf(await api.dispatch('datasets:preview', { datasetId: data.id, rows: 200 })) as typeof preview;
  });

  test('a finished run keeps its test set for browsing', async () => {
    assert.match(model.evaluationId ?? '', /^evaluation-\d+$/);
    const cell = busiestCell(model.test!.report.confusion, false);
    const page = resultOf(await api.dispatch('evaluation:examples', { evaluationId: model.evaluationId, actual: cell.actual, predicted: cell.predicted })) as CellExamples;
    assert.equal(page.total, cell.count, 'as many examples as the confusion matrix counts');
    assert.equal(page.kind, 'images');
  });

  test('a cell gives its examples sorted by confidence, each of that true class and prediction', async () => {
    assert.match(evaluation.evaluationId, /^evaluation-\d+$/);
    for (const offDiagonal of [false, true]) {
      const cell = busiestCell(evaluation.report.confusion, offDiagonal);
      if (cell.count <= 0) continue;
      const page = resultOf(await api.dispatch('evaluation:examples', { evaluationId: evaluation.evaluationId, actual: cell.actual, predicted: cell.predicted })) as CellExamples;
      assert.equal(page.total, cell.count);
      assert.equal(page.order, 'highest');
      assert.deepEqual(page.shape, [1, 28, 28]);
      assert.equal(page.examples.length, Math.min(cell.count, 48));
      for (let i = 1; i < page.examples.length; i++) assert.ok(page.examples[i - 1].confidence >= page.examples[i].confidence, 'highest confidence first');
      for (const example of page.examples) {
        assert.equal(preview.images[example.index].label, data.classLabels[cell.actual], `example ${example.index} is of the true class`);
        assert.equal(evaluation.predictions[example.index], cell.predicted, `example ${example.index} was predicted as the cell's class`);
        assert.equal(argmax(example.probabilities), cell.predicted);
        assert.equal(example.confidence, example.probabilities[cell.predicted]);
        assert.ok(Math.abs(example.confidence - evaluation.confidences[example.index]) < 1e-6);
        assert.deepEqual(example.pixels, preview.images[example.index].pixels, 'pixels as the data holds them (0-255)');
      }

      const lowest = resultOf(
        await api.dispatch('evaluation:examples', { evaluationId: evaluation.evaluationId, actual: cell.actual, predicted: cell.predicted, order: 'lowest', limit: 200 }),
      ) as CellExamples;
      const confidences = lowest.examples.map((example) => example.confidence);
      assert.deepEqual(confidences, [...confidences].sort((a, b) => a - b), 'lowest confidence first');
      if (cell.count > 2) {
        const second = resultOf(
          await api.dispatch('evaluation:examples', { evaluationId: evaluation.evaluationId, actual: cell.actual, predicted: cell.predicted, order: 'lowest', limit: 1, offset: 1 }),
        ) as CellExamples;
        assert.deepEqual(second.examples.map((example) => example.index), [lowest.examples[1].index], 'offset and limit page through');
      }
    }
  });

  test('models:predict on an example gives probabilities summing to 1 and the evaluation\'s prediction', async () => {
    const cell = busiestCell(evaluation.report.confusion, false);
    const page = resultOf(
      await api.dispatch('evaluation:examples', { evaluationId: evaluation.evaluationId, actual: cell.actual, predicted: cell.predicted, limit: 5 }),
    ) as CellExamples;
    const rows = [...page.examples.map((example) => example.pixels!), preview.images[0].pixels];
    const predicted = resultOf(await api.dispatch('models:predict', { modelId: model.modelId, inputs: rows, device: 'cpu' })) as PredictionResult;
    assert.deepEqual(predicted.classLabels, data.classLabels);
    assert.equal(predicted.probabilities.length, rows.length);
    predicted.probabilities.forEach((probabilities, row) => {
      assert.equal(probabilities.length, 10);
      assert.ok(Math.abs(sum(probabilities) - 1) < 1e-4, `row ${row} sums to ${sum(probabilities)}`);
      assert.equal(predicted.predictions[row], argmax(probabilities));
    });
    page.examples.forEach((example, row) => {
      assert.equal(predicted.predictions[row], cell.predicted, 'the same class as the evaluation');
      assert.ok(Math.abs(predicted.probabilities[row][cell.predicted] - example.confidence) < 1e-4);
    });
    assert.equal(predicted.predictions[rows.length - 1], evaluation.predictions[0]);
  });

  test('bad payloads name the field; unknown ids are error values', async () => {
    const evaluationId = evaluation.evaluationId;
    const cases: [string, unknown, string][] = [
      ['evaluation:examples', { evaluationId, actual: 0, predicted: 0, limit: 201 }, 'limit'],
      ['evaluation:examples', { evaluationId, actual: -1, predicted: 0 }, 'actual'],
      ['evaluation:examples', { evaluationId, actual: 0, predicted: 10 }, 'predicted'],
      ['evaluation:examples', { evaluationId, actual: 0, predicted: 0, order: 'random' }, 'order'],
      ['evaluation:examples', { evaluationId, actual: 0, predicted: 0, page: 2 }, 'page'],
      ['models:predict', { modelId: model.modelId, inputs: [[1, 2, 3]] }, 'inputs.0'],
      ['models:predict', { modelId: model.modelId, inputs: [] }, 'inputs'],
      ['models:predict', { modelId: model.modelId, inputs: Array.from({ length: 65 }, () => [0]) }, 'inputs'],
      ['models:predict', { modelId: model.modelId, inputs: [['0']] }, 'inputs.0.0'],
      ['models:predict', { inputs: [[0]] }, 'modelId'],
    ];
    for (const [channel, payload, field] of cases) {
      const response = await api.dispatch(channel, payload);
      assert.equal(response.result, undefined, `${channel} ${JSON.stringify(payload).slice(0, 80)} is refused`);
      assert.equal(response.error?.field, field, `${channel}: ${response.error?.message}`);
    }
    const unknownEvaluation = await api.dispatch('evaluation:examples', { evaluationId: 'evaluation-999', actual: 0, predicted: 0 });
    assert.match(unknownEvaluation.error?.message ?? '', /no evaluation with id "evaluation-999"/);
    const unknownModel = await api.dispatch('models:predict', { modelId: 'model-999', inputs: [[0]] });
    assert.match(unknownModel.error?.message ?? '', /no model with id "model-999"/);
  });

  test('the session keeps only the last few evaluations', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      ids.push((resultOf(await api.dispatch('evaluation:evaluate', { modelId: model.modelId, datasetId: data.id, device: 'cpu' })) as EvaluationResult).evaluationId);
    }
    const oldest = await api.dispatch('evaluation:examples', { evaluationId: ids[0], actual: 0, predicted: 0 });
    assert.match(oldest.error?.message ?? '', /no evaluation with id/);
    assert.ok(resultOf(await api.dispatch('evaluation:examples', { evaluationId: ids[3], actual: 0, predicted: 0 })));
  });
});

describe('evaluation:examples and models:predict on a table', () => {
  test('rows of feature values, and predict on them agrees with the evaluation', async () => {
    const iris = resultOf(await api.dispatch('datasets:open', { source: { kind: 'path', path: irisCsv } })) as DatasetInfo;
    const model = await train(iris.id, 'dense:8:relu,dense:3');
    const evaluation = resultOf(await api.dispatch('evaluation:evaluate', { modelId: model.modelId, datasetId: iris.id, device: 'cpu' })) as EvaluationResult;
    const cell = busiestCell(evaluation.report.confusion, false);
    const page = resultOf(await api.dispatch('evaluation:examples', { evaluationId: evaluation.evaluationId, actual: cell.actual, predicted: cell.predicted })) as CellExamples;
    assert.equal(page.kind, 'table');
    assert.deepEqual(page.featureNames, iris.featureNames);
    assert.equal(page.total, cell.count);
    for (const example of page.examples) {
      assert.equal(example.values?.length, 4);
      assert.equal(example.pixels, undefined);
      assert.equal(evaluation.predictions[example.index], cell.predicted);
    }
    const rows = page.examples.slice(0, 3).map((example) => example.values!);
    const predicted = resultOf(await api.dispatch('models:predict', { modelId: model.modelId, inputs: rows, device: 'cpu' })) as PredictionResult;
    rows.forEach((_, row) => {
      assert.ok(Math.abs(sum(predicted.probabilities[row]) - 1) < 1e-4);
      assert.equal(predicted.predictions[row], cell.predicted, 'predict reads rows the way evaluation did (same normalisation)');
    });
  });
});
