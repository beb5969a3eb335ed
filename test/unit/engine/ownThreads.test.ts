// Runs live on threads the engine owns, not on libuv's pool (4 threads, shared by fs, dns, zlib and
// crypto): six paused runs, more than the pool has threads, leave a file read free to complete.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import * as engine from '../../../app/engine';
import { within } from '../api/helpers';
import { mlpSpec, mnistLike, sleep } from './fixtures';

describe('training threads', () => {
  test('six paused runs leave libuv\'s pool free: fs.promises.readFile still completes', async () => {
    const runs = Array.from({ length: 6 }, (_, i) =>
      engine.train(mlpSpec(32), mnistLike(256, 20 + i), null, { epochs: 1000, batchSize: 32, device: 'cpu', threads: 1 }),
    );
    for (const run of runs) run.pause();
    try {
      await sleep(300); // every run is at its pause now (on a pool thread, each would hold one there)
      const text = await within(fs.promises.readFile(__filename, 'utf8'), 5000, 'fs.promises.readFile beside six paused runs');
      assert.match(text, /six paused runs/);
    } finally {
      for (const run of runs) run.cancel();
    }
    const results = await within(Promise.all(runs.map((run) => run.promise)), 10000, 'the cancelled runs to settle');
    for (const result of results) {
      assert.equal(result.status, 'cancelled');
      assert.ok(result.steps < 1000 * 8, `${result.steps} steps`);
    }
  });

  test('a Worker terminated mid-run, with a paused run and a run without a listener, stops them and goes away promptly', async () => {
    const modules = { engine: path.join(__dirname, '..', '..', '..', 'app', 'engine'), fixtures: path.join(__dirname, 'fixtures') };
    const worker = new Worker(
      `const engine = require(${JSON.stringify(modules.engine)});
       const { native } = require(${JSON.stringify(modules.engine)} + '/native');
       const fixtures = require(${JSON.stringify(modules.fixtures)});
       const { parentPort } = require('node:worker_threads');
       const options = { epochs: 10000, batchSize: 64, device: 'cpu', threads: 1 };
       engine.train(fixtures.mlpSpec(), fixtures.mnistLike(1024), null, options).pause();
       native().startTraining(JSON.stringify(fixtures.mlpSpec()), fixtures.mnistLike(1024), null, options, null, null);
       engine.train(fixtures.mlpSpec(), fixtures.mnistLike(1024), null, options, (event) => {
         if (event.type === 'step') parentPort.postMessage(event.globalStep);
       });`,
      { eval: true },
    );
    const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
    await within(new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    }), 20000, 'the worker\'s first step event');
    const started = performance.now();
    await within(worker.terminate(), 5000, 'the worker to terminate');
    assert.equal(await exited, 1, 'terminated, not crashed');
    assert.ok(performance.now() - started < 2000, `terminate took ${performance.now() - started} ms`);
    // the addon is still sound in this environment
    const after = await engine.train(mlpSpec(32), mnistLike(256), null, { epochs: 1, batchSize: 64, device: 'cpu' }).promise;
    assert.equal(after.status, 'completed');
  });
});
