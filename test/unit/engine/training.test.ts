// Training runs off the event loop: progress events, cancel, pause/resume, errors from listeners.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as v8 from 'node:v8';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import * as vm from 'node:vm';
import { Worker } from 'node:worker_threads';
import * as engine from '../../../app/engine';
import { blobSpec, blobs, mlpSpec, mnistLike, sleep } from './fixtures';

describe('training', () => {
  test('the event loop keeps running during a long run', async () => {
    // Many epochs, cancelled by a timer after 1.5 s: the timer firing mid-run is part of the test.
    const data = mnistLike(4096);
    let ticks = 0;
    let stepEvents = 0;
    let stepEventsBeforeTimeout = 0;
    let timeoutFiredAt = -1;
    const started = performance.now();
    const run = engine.train(mlpSpec(), data, null, { epochs: 10000, batchSize: 64, device: 'cpu' }, (event) => {
      if (event.type === 'step') stepEvents++;
    });
    const interval = setInterval(() => ticks++, 10);
    const timeout = setTimeout(() => {
      timeoutFiredAt = performance.now() - started;
      stepEventsBeforeTimeout = stepEvents;
      run.cancel();
    }, 1500);
    let result: engine.TrainResult;
    try {
      result = await run.promise;
    } finally {
      clearInterval(interval);
      clearTimeout(timeout);
    }
    const elapsed = performance.now() - started;
    assert.equal(result.status, 'cancelled');
    // Generous bounds: other processes may share the two cores.
    assert.ok(timeoutFiredAt >= 1500 && timeoutFiredAt < 4000, `the timer fired at ${timeoutFiredAt} ms`);
    assert.ok(elapsed - timeoutFiredAt < 1000, `cancel took ${elapsed - timeoutFiredAt} ms`);
    assert.ok(ticks >= (0.5 * elapsed) / 10, `${ticks} ticks of 10 ms in ${elapsed.toFixed(0)} ms`);
    // Training really ran meanwhile (loosely: throughput depends on what else shares the cores).
    assert.ok(stepEventsBeforeTimeout >= 3, `${stepEventsBeforeTimeout} step events while the timers ran`);
    assert.ok(result.steps >= 5, `${result.steps} steps`);
    assert.ok(result.parameters.every(Number.isFinite));
  });

  test('epoch events arrive once per epoch with finite losses; step events are consistent', async () => {
    const trainingSet = blobs(512, 1);
    const validationSet = blobs(128, 2);
    const events: engine.TrainProgress[] = [];
    const run = engine.train(
      blobSpec,
      trainingSet,
      validationSet,
      { epochs: 4, batchSize: 32, seed: 3, device: 'cpu', progressIntervalSeconds: 0 },
      (event) => events.push(event),
    );
    assert.equal(run.device, 'cpu');
    const result = await run.promise;
    assert.equal(result.status, 'completed');
    assert.equal(result.steps, 4 * 16);
    assert.match(result.device, /cpu/i);
    assert.ok(result.seconds > 0);

    const epochs = events.filter((event): event is engine.EpochEvent => event.type === 'epoch');
    assert.deepEqual(epochs.map((event) => event.epoch), [1, 2, 3, 4]);
    for (const event of epochs) {
      assert.ok(Number.isFinite(event.trainLoss) && event.trainLoss >= 0);
      assert.ok(event.trainAccuracy >= 0 && event.trainAccuracy <= 1);
      assert.ok(Number.isFinite(event.validationLoss) && Number.isFinite(event.validationAccuracy));
      assert.ok(event.seconds >= 0);
    }
    assert.ok(epochs[3].trainLoss < epochs[0].trainLoss, 'the loss goes down');
    assert.ok(epochs[3].validationAccuracy! > 0.9, `validation accuracy ${epochs[3].validationAccuracy}`);
    assert.deepEqual(result.history, epochs.map(({ type: _type, ...stats }) => stats));

    const steps = events.filter((event): event is engine.StepEvent => event.type === 'step');
    assert.ok(steps.length > 0);
    let previous = 0;
    for (const step of steps) {
      assert.equal(step.stepsPerEpoch, 16);
      assert.equal(step.totalSteps, 64);
      assert.ok(step.globalStep > previous && step.globalStep <= 64);
      assert.equal(step.globalStep, (step.epoch - 1) * 16 + step.step);
      assert.ok(Number.isFinite(step.loss) && step.samplesPerSecond > 0 && step.etaSeconds >= 0);
      previous = step.globalStep;
    }
    // Every step event of an epoch comes before that epoch's event.
    const lastStepIndex = events.map((event) => event.type).lastIndexOf('step');
    assert.ok(lastStepIndex < events.indexOf(epochs[3]));
  });

  test('cancel from a step event stops within one step', async () => {
    // Long steps (batch 1024 through 784-512-10, ~50 ms on 2 cores) so that one step outlasts the
    // event's trip to JS by far.
    const data = mnistLike(8192);
    let cancelledAt = -1;
    const run = engine.train(
      mlpSpec(512),
      data,
      null,
      { epochs: 50, batchSize: 1024, device: 'cpu', progressIntervalSeconds: 0 },
      (event) => {
        if (event.type === 'step' && event.globalStep >= 3 && cancelledAt < 0) {
          cancelledAt = event.globalStep;
          run.cancel();
        }
      },
    );
    const result = await run.promise;
    assert.equal(result.status, 'cancelled');
    assert.ok(cancelledAt >= 3);
    assert.ok(
      result.steps >= cancelledAt && result.steps <= cancelledAt + 1,
      `cancelled after step ${cancelledAt}, stopped after ${result.steps}`,
    );
    assert.ok(result.parameters.every(Number.isFinite));
  });

  test('pause holds the run between steps, resume finishes it', async () => {
    // ~50 ms steps, as for cancel, so the pause lands within the step after the event.
    const data = mnistLike(8192);
    let events = 0;
    let pausedAtStep = -1;
    let maxStep = 0;
    let onPaused: () => void = () => {};
    const paused = new Promise<void>((resolve) => (onPaused = resolve));
    const run: engine.TrainingRun = engine.train(
      mlpSpec(512),
      data,
      null,
      { epochs: 2, batchSize: 1024, device: 'cpu', progressIntervalSeconds: 0 },
      (event) => {
        events++;
        if (event.type !== 'step') return;
        maxStep = Math.max(maxStep, event.globalStep);
        if (event.globalStep >= 3 && pausedAtStep < 0) {
          pausedAtStep = event.globalStep;
          run.pause();
          onPaused();
        }
      },
    );
    await paused;
    await sleep(150); // the event of the step in flight may still arrive
    const eventsWhilePaused = events;
    const stepWhilePaused = maxStep;
    await sleep(300);
    assert.equal(events, eventsWhilePaused, 'no events while paused');
    assert.ok(stepWhilePaused <= pausedAtStep + 1, `paused at step ${pausedAtStep}, reached ${stepWhilePaused}`);
    run.resume();
    const result = await run.promise;
    assert.equal(result.status, 'completed');
    assert.equal(result.steps, 2 * 8);
    assert.ok(events > eventsWhilePaused);
  });

  test('cancel while paused ends the run', async () => {
    const run = engine.train(mlpSpec(), mnistLike(1024), null, { epochs: 100, batchSize: 64, device: 'cpu' });
    run.pause();
    await sleep(50);
    const cancelledAt = performance.now();
    run.cancel();
    const result = await run.promise;
    assert.ok(performance.now() - cancelledAt < 500);
    assert.equal(result.status, 'cancelled');
    assert.ok(result.steps < 100 * 16);
  });

  test('a throwing progress listener cancels the run and rejects with its error', async () => {
    const run = engine.train(blobSpec, blobs(512), null, { epochs: 50, batchSize: 8, device: 'cpu' }, (event) => {
      if (event.type === 'epoch') throw new Error('listener failed');
    });
    await assert.rejects(run.promise, /listener failed/);
  });

  test('the data stays alive when the caller drops it', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const run = (() => {
      const data = blobs(2048, 9); // no reference outlives this function
      return engine.train(blobSpec, data, data, { epochs: 5, batchSize: 16, seed: 1, device: 'cpu' });
    })();
    for (let i = 0; i < 5; i++) {
      gc();
      await sleep(5);
    }
    const result = await run.promise;
    assert.equal(result.status, 'completed');
    for (const epoch of result.history) assert.ok(epoch.validationAccuracy! > 0.9);
  });

  test('a worker thread training can be terminated promptly', async () => {
    const enginePath = path.join(__dirname, '..', '..', '..', 'app', 'engine');
    const fixturesPath = path.join(__dirname, 'fixtures');
    const worker = new Worker(
      `const engine = require(${JSON.stringify(enginePath)});
       const fixtures = require(${JSON.stringify(fixturesPath)});
       const { parentPort } = require('node:worker_threads');
       engine.train(fixtures.mlpSpec(), fixtures.mnistLike(1024), null, { epochs: 10000, batchSize: 64, device: 'cpu' },
         (event) => { if (event.type === 'step') parentPort.postMessage(event.globalStep); });`,
      { eval: true },
    );
    await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    const started = performance.now();
    await worker.terminate();
    assert.ok(performance.now() - started < 2000, `terminate took ${performance.now() - started} ms`);
  });

  test('process.exit() during a run (even a paused one) exits at once', () => {
    const enginePath = path.join(__dirname, '..', '..', '..', 'app', 'engine');
    const fixturesPath = path.join(__dirname, 'fixtures');
    const script = `const engine = require(${JSON.stringify(enginePath)});
      const fixtures = require(${JSON.stringify(fixturesPath)});
      const run = engine.train(fixtures.mlpSpec(), fixtures.mnistLike(1024), null, { epochs: 10000, batchSize: 64, device: 'cpu' });
      if (process.argv[1] === 'pause') run.pause();
      setTimeout(() => process.exit(3), 200);`;
    for (const mode of ['run', 'pause']) {
      const started = performance.now();
      const child = spawnSync(process.execPath, ['-e', script, mode], { timeout: 20000, env: process.env });
      assert.equal(child.status, 3, `${mode}: status ${child.status}, signal ${child.signal}, ${child.stderr}`);
      assert.ok(performance.now() - started < 10000);
    }
  });
});
