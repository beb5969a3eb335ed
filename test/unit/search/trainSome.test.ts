// The search's scheduler of a rung's trials (services/search.ts trainSome): several at once, in order; a trial
// refused for GPU memory while others train runs again alone; other errors end the rung.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { trainSome } from '../../../app/services/search';

const pause = () => new Promise((resolve) => setTimeout(resolve, 5));
const memoryError = () => new Error('too little free memory on NVIDIA H100 for this model and batch size: the run needs at least 3.00 GiB');

test('trials start in order, at most `parallel` at a time', async () => {
  let running = 0, most = 0;
  const started: number[] = [];
  await trainSome([0, 1, 2, 3, 4, 5, 6], 3, async (config, index) => {
    started.push(index);
    most = Math.max(most, ++running);
    await pause();
    running--;
    return true;
  });
  assert.deepEqual(started, [0, 1, 2, 3, 4, 5, 6]);
  assert.equal(most, 3);
});

test('a trial refused for GPU memory while others train runs again alone after them', async () => {
  let running = 0;
  const done: number[] = [];
  const alongside = new Map<number, number>();
  let refused = false;
  await trainSome(['a', 'b', 'c', 'd'], 2, async (config, index) => {
    running++;
    try {
      await pause();
      if (index === 1 && !refused) {
        refused = true;
        throw memoryError();
      }
      alongside.set(index, running - 1);
      done.push(index);
      return true;
    } finally {
      running--;
    }
  });
  assert.deepEqual([...done].sort(), [0, 1, 2, 3], 'every trial trained once');
  assert.equal(done.at(-1), 1, 'the refused trial last');
  assert.equal(alongside.get(1), 0, 'and alone');
});

test('one at a time, a memory refusal is the search\'s error; another error ends the rung after the trials training', async () => {
  await assert.rejects(trainSome([0, 1], 1, async () => { throw memoryError(); }), /too little free memory/);
  await assert.rejects(trainSome([0], 4, async () => { throw memoryError(); }), /too little free memory/,
    'refused while no other trial trained: alone it would not fit either');
  await assert.rejects(trainSome([0, 1], 2, async () => { await pause(); throw new Error('out of memory while training (host)'); }),
    /host/, 'only the engine\'s GPU refusals are retried');
  const started: number[] = [];
  await assert.rejects(trainSome([0, 1, 2, 3, 4], 2, async (config, index) => {
    started.push(index);
    await pause();
    if (index === 0) throw new Error('the data file vanished');
    return true;
  }), /the data file vanished/);
  assert.deepEqual(started, [0, 1], 'no trial starts after the error');
});

test('a trial that says stop (cancelled, out of time) ends the rung: no later one starts, no retry', async () => {
  const started: number[] = [];
  await trainSome([0, 1, 2, 3], 2, async (config, index) => {
    started.push(index);
    if (index === 1) throw memoryError();  // refused while trial 0 trains
    await pause();
    return index !== 0;
  });
  assert.deepEqual(started, [0, 1], 'the refused trial is not retried once the rung stops');
});
