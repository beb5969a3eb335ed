// The data handed to a run or an evaluation is the run's own (a copy taken when it starts): a caller that
// overwrites its typed arrays afterwards, even with NaN features and labels no class has, changes nothing.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as engine from '../../../app/engine';
import { mlpSpec, mnistLike } from './fixtures';

// ~10-20 ms steps (batch 256 through 784-256-10 on 2 cores), 3 x 8 of them: the run is still going when
// its first step event reaches JS.
const spec = mlpSpec(256);
const options: engine.TrainOptions = { epochs: 3, batchSize: 256, seed: 5, device: 'cpu', progressIntervalSeconds: 0 };
const classCount = 10;

function bytes(values: Float32Array): Buffer {
  return Buffer.from(values.buffer, values.byteOffset, values.byteLength);
}

/** The history without the timings, which differ from run to run. */
function scores(history: engine.EpochStats[]) {
  return history.map(({ seconds: _seconds, ...rest }) => rest);
}

function spoil(data: engine.Dataset): void {
  data.features.fill(Number.NaN);
  data.labels.fill(classCount + 1000);
}

describe('data handed to the engine is protected from later mutation', () => {
  test('a run whose arrays are overwritten at its first step event ends exactly as an untouched run', async () => {
    const reference = await engine.train(spec, mnistLike(2048, 8), mnistLike(512, 9), options).promise;
    assert.equal(reference.status, 'completed', reference.message);

    const trainingSet = mnistLike(2048, 8);
    const validationSet = mnistLike(512, 9);
    let spoiled = false;
    let stepsAfterSpoiling = 0;
    const run = engine.train(spec, trainingSet, validationSet, options, (event) => {
      if (event.type !== 'step') return;
      if (spoiled) stepsAfterSpoiling++;
      if (!spoiled) {
        spoil(trainingSet);
        spoil(validationSet);
        spoiled = true;
      }
    });
    const result = await run.promise;
    assert.ok(stepsAfterSpoiling > 0, 'the arrays were overwritten while the run still had steps to go');
    assert.equal(result.status, 'completed', result.message);
    assert.equal(result.steps, reference.steps);
    assert.deepEqual(scores(result.history), scores(reference.history));
    assert.ok(bytes(result.parameters).equals(bytes(reference.parameters)), 'the weights are bit-identical');
  });

  test('an evaluation whose arrays are overwritten right after the call scores the untouched data', async () => {
    const parameters = engine.initialParameters(spec);
    const reference = await engine.evaluate(spec, parameters, mnistLike(8192, 10), { device: 'cpu' });
    const data = mnistLike(8192, 10);
    const pending = engine.evaluate(spec, parameters, data, { device: 'cpu' });
    spoil(data);
    const result = await pending;
    assert.equal(result.loss, reference.loss);
    assert.equal(result.accuracy, reference.accuracy);
    assert.deepEqual(result.predictions, reference.predictions);
    assert.ok(bytes(result.probabilities).equals(bytes(reference.probabilities)), 'the probabilities are bit-identical');
  });
});
