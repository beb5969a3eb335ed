// Cancel at the edges of a run, through the engine wrapper (docs/RELIABILITY.md, "Faults"): before the
// first step (the initial weights), during the first step (stops after it or the next), during the last
// step (too late to skip anything: the run completes with the uninterrupted run's weights).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as engine from '../../../app/engine';
import { mlpSpec, mnistLike } from './fixtures';

// ~50 ms steps (batch 1024 through 784-512-10 on 2 cores): a step outlasts an event's trip to JS.
const data = mnistLike(4096);
const spec = mlpSpec(512);
const options: engine.TrainOptions = { epochs: 2, batchSize: 1024, device: 'cpu', threads: 2, seed: 4, progressIntervalSeconds: 0 };
const totalSteps = 8;

function cancelAtStep(globalStep: number): { run: engine.TrainingRun; result: Promise<engine.TrainResult> } {
  let cancelled = false;
  const run = engine.train(spec, data, data, options, (event) => {
    if (!cancelled && event.type === 'step' && event.globalStep >= globalStep) {
      cancelled = true;
      run.cancel();
    }
  });
  return { run, result: run.promise };
}

describe('cancel at the edges of a run', () => {
  test('before the first step: cancelled with the initial weights', async () => {
    const run = engine.train(spec, data, data, options);
    run.cancel();
    const result = await run.promise;
    assert.equal(result.status, 'cancelled');
    assert.equal(result.steps, 0);
    assert.deepEqual(result.history, []);
    assert.deepEqual(result.parameters, engine.initialParameters(spec));
  });

  test('during the first step: cancelled after it (or the next), with those weights, usable', async () => {
    const result = await cancelAtStep(1).result;
    assert.equal(result.status, 'cancelled');
    assert.ok(result.steps >= 1 && result.steps <= 2, `stopped after ${result.steps} steps`);
    assert.match(result.message, /^training cancelled at epoch 1, step [23] of 4; kept the weights of the last completed step$/);
    assert.deepEqual(result.history, []);
    assert.ok(result.parameters.every(Number.isFinite));
    assert.notDeepEqual(result.parameters, engine.initialParameters(spec));
    const evaluation = await engine.evaluate(spec, result.parameters, data, { device: 'cpu' });
    assert.ok(Number.isFinite(evaluation.loss));
  });

  test('during the last step: the run completes with the uninterrupted run\'s weights', async () => {
    const late = await cancelAtStep(totalSteps).result;
    const whole = await engine.train(spec, data, data, options).promise;
    assert.equal(late.status, 'completed', late.message);
    assert.equal(late.steps, totalSteps);
    assert.equal(late.history.length, 2);
    assert.ok(late.history[1].validationLoss !== undefined && Number.isFinite(late.history[1].validationLoss));
    assert.deepEqual(late.parameters, whole.parameters);
  });
});
