// Regression, class weights and weight decay through the addon on the CPU: a regression's epoch events
// carry trainR2 and the validation MAE/RMSE/R²/MAPE (original units), a classification's do not; evaluate
// returns the head's outputs (with and without targets); class weights reach the engine and bad ones are
// refused; the spec schema takes task/huber/weightDecay and refuses a regression with a classifier's loss.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as engine from '../../../app/engine';
import { parseModelSpec, type ModelSpec } from '../../../app/core/model/spec';
import { classCount, outputWidth } from '../../../app/core/model/shapes';
import { blobSpec, blobs, random } from './fixtures';

const regressionSpec: ModelSpec = {
  input: [2],
  task: 'regression',
  layers: [
    { kind: 'dense', units: 16, activation: 'tanh' },
    { kind: 'dense', units: 1 },
  ],
  loss: 'mse',
  optimizer: { kind: 'adam', lr: 0.01, weightDecay: 0.0001 },
  seed: 3,
};

/** y = 10 + 2 x1 - 3 x2 + noise (always > 0: MAPE is defined), targets normalised by `mean`/`std`. */
function table(count: number, seed: number, mean?: number, std?: number) {
  const next = random(seed);
  const features = new Float32Array(count * 2);
  const raw: number[] = [];
  for (let i = 0; i < count; i++) {
    const x1 = 2 * next() - 1;
    const x2 = 2 * next() - 1;
    features[2 * i] = x1;
    features[2 * i + 1] = x2;
    raw.push(10 + 2 * x1 - 3 * x2 + 0.1 * (next() - 0.5));
  }
  const m = mean ?? raw.reduce((a, b) => a + b, 0) / count;
  const s = std ?? Math.sqrt(raw.reduce((a, b) => a + (b - m) ** 2, 0) / count);
  const targets = Float32Array.from(raw, (y) => (y - m) / s);
  const dataset: engine.Dataset = { features, labels: new Int32Array(count).fill(-1), targets };
  return { dataset, mean: m, std: s };
}

describe('regression through the addon (CPU)', () => {
  const train = table(300, 1);
  const valid = table(100, 2, train.mean, train.std);

  test('epoch events and the history carry the regression metrics; evaluate returns the outputs', async () => {
    const epochs: engine.EpochStats[] = [];
    const run = engine.train(
      regressionSpec,
      train.dataset,
      valid.dataset,
      { epochs: 30, batchSize: 32, device: 'cpu', seed: 5, targetMean: [train.mean], targetStd: [train.std] },
      (event) => {
        if (event.type === 'epoch') epochs.push(event);
      },
    );
    const result = await run.promise;
    assert.equal(result.status, 'completed');
    assert.equal(epochs.length, 30);
    const last = epochs[epochs.length - 1];
    for (const key of ['trainR2', 'validationMae', 'validationRmse', 'validationR2', 'validationMape'] as const) {
      assert.equal(typeof last[key], 'number', `${key} is set`);
      assert.ok(Number.isFinite(last[key]), `${key} is finite`);
    }
    assert.ok(last.validationR2! > 0.95, `R² ${last.validationR2}`);
    assert.ok(last.trainR2! > 0.95, `train R² ${last.trainR2}`);
    // original units: the targets spread ~2.1 around 10, so the RMSE is small in those units and MAPE a fraction
    assert.ok(last.validationRmse! < 0.3 && last.validationMae! <= last.validationRmse!, `RMSE ${last.validationRmse}`);
    assert.ok(last.validationMape! > 0 && last.validationMape! < 0.03, `MAPE ${last.validationMape}`);
    const { type: _type, ...lastStats } = last as engine.EpochEvent;
    assert.deepEqual(result.history[29], lastStats, 'the history holds the epoch events\' stats');

    const evaluated = await engine.evaluate(regressionSpec, result.parameters, valid.dataset, { device: 'cpu' });
    assert.ok(evaluated.outputs instanceof Float32Array);
    assert.equal(evaluated.outputs.length, 100);
    assert.equal(evaluated.predictions.length, 0);
    assert.equal(evaluated.probabilities.length, 0);
    assert.equal(evaluated.classes, 0);
    assert.ok(Math.abs(evaluated.loss - last.validationLoss!) < 1e-9);
    // prediction input: no targets
    const unlabeled = await engine.evaluate(
      regressionSpec,
      result.parameters,
      { features: valid.dataset.features, labels: new Int32Array(100).fill(-1) },
      { device: 'cpu' },
    );
    assert.deepEqual(unlabeled.outputs, evaluated.outputs);
    assert.equal(unlabeled.loss, 0);
  });

  test("a regression checkpoint resumes exactly through the addon, with the history's metrics", async () => {
    const options = { epochs: 4, batchSize: 32, device: 'cpu' as const, seed: 8, targetMean: [train.mean], targetStd: [train.std] };
    const checkpoints: engine.CheckpointEvent[] = [];
    const whole = await engine.train(regressionSpec, train.dataset, valid.dataset, { ...options, checkpoints: true }, (event) => {
      if (event.type === 'checkpoint') checkpoints.push(event);
    }).promise;
    assert.equal(checkpoints.length, 4);
    assert.equal(typeof checkpoints[1].history[1].validationR2, 'number');
    const { type: _checkpoint, ...state } = checkpoints[1];
    const resumed = await engine.train(regressionSpec, train.dataset, valid.dataset, { ...options, resume: state }).promise;
    assert.deepEqual(resumed.parameters, whole.parameters);
    // every field but the wall-clock seconds, bit for bit
    const withoutTime = (history: engine.EpochStats[]) => history.map(({ seconds: _seconds, ...rest }) => rest);
    assert.deepEqual(withoutTime(resumed.history), withoutTime(whole.history));
  });

  test('a classification run has none of the regression fields', async () => {
    const epochs: engine.EpochStats[] = [];
    const data = blobs(64);
    const run = engine.train(blobSpec, data, data, { epochs: 2, batchSize: 16, device: 'cpu' }, (event) => {
      if (event.type === 'epoch') epochs.push(event);
    });
    await run.promise;
    for (const epoch of epochs) {
      for (const key of ['trainR2', 'validationMae', 'validationRmse', 'validationR2', 'validationMape']) {
        assert.equal(key in epoch, false, `${key} is absent`);
      }
      assert.equal(typeof epoch.validationAccuracy, 'number');
    }
  });

  test('bad regression data and options are clear errors', async () => {
    const wide = { ...train.dataset, targets: new Float32Array(600) };
    assert.throws(() => engine.train(regressionSpec, wide, null, { epochs: 1, batchSize: 8, device: 'cpu' }), {
      name: 'RangeError',
      message: 'train.targets has 600 values but 300 samples x 1 outputs of the model\'s last layer need 300',
    });
    const noTargets = { features: train.dataset.features, labels: train.dataset.labels };
    await assert.rejects(engine.train(regressionSpec, noTargets, null, { epochs: 1, batchSize: 8, device: 'cpu' }).promise, {
      code: 'ERR_NNSTUDIO_ENGINE',
      message: /training data: no targets: a regression needs the target columns/,
    });
    await assert.rejects(
      engine.train(regressionSpec, train.dataset, null, { epochs: 1, batchSize: 8, device: 'cpu', classWeights: [1, 2] }).promise,
      { message: /class weights are for classification/ },
    );
  });

  test('class weights reach the engine: ones change nothing, others change the run, a wrong count is refused', async () => {
    const data = blobs(64);
    const options = { epochs: 2, batchSize: 16, device: 'cpu' as const, seed: 1 };
    const plain = await engine.train(blobSpec, data, data, options).promise;
    const ones = await engine.train(blobSpec, data, data, { ...options, classWeights: [1, 1] }).promise;
    const weighted = await engine.train(blobSpec, data, data, { ...options, classWeights: [0.2, 5] }).promise;
    assert.deepEqual(ones.parameters, plain.parameters);
    assert.notDeepEqual(weighted.parameters, plain.parameters);
    await assert.rejects(engine.train(blobSpec, data, null, { ...options, classWeights: [1, 2, 3] }).promise, {
      message: 'class weights: 3 values but the model predicts 2 classes',
    });
    assert.throws(() => engine.train(blobSpec, data, null, { ...options, classWeights: [1, Number.NaN] }), {
      name: 'RangeError',
      message: 'options.classWeights[1] must be a finite number',
    });
  });
});

describe('the spec schema: task, huber, weightDecay', () => {
  test('new fields parse; old specs stay valid; a regression needs mse, mae or huber', () => {
    assert.deepEqual(parseModelSpec(blobSpec), blobSpec);
    const huber = parseModelSpec({ ...regressionSpec, loss: 'huber', huberDelta: 0.5 });
    assert.equal(huber.huberDelta, 0.5);
    assert.equal(classCount(huber), 0);
    assert.equal(outputWidth(huber), 1);
    assert.equal(classCount(blobSpec), 2);
    assert.throws(() => parseModelSpec({ ...regressionSpec, loss: 'softmax_cross_entropy' }), /a regression needs loss mse, mae or huber/);
    assert.throws(() => parseModelSpec({ ...regressionSpec, task: 'ranking' }), /invalid model spec/);
    assert.throws(() => parseModelSpec({ ...regressionSpec, huberDelta: 0 }), /invalid model spec/);
    assert.throws(() => parseModelSpec({ ...regressionSpec, optimizer: { kind: 'sgd', lr: 0.1, weightDecay: -1 } }), /invalid model spec/);
    // the engine reads the same JSON
    assert.equal(engine.inferShapes(huber).length, 2);
  });
});
