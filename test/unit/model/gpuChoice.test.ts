// --gpus (issue 17): all, a count, a list; refused with what the machine has when it does not fit.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseGpuChoice, resolveGpus } from '../../../app/core/model/gpuChoice';

describe('GPU choice', () => {
  test('all, a count and a list, resolved against the machine', () => {
    assert.deepEqual(resolveGpus(parseGpuChoice('all'), [0, 1, 2, 3]), [0, 1, 2, 3]);
    assert.deepEqual(resolveGpus(parseGpuChoice('2'), [0, 1, 2, 3]), [0, 1]);
    assert.deepEqual(resolveGpus(parseGpuChoice(' 3, 1 '), [0, 1, 2, 3]), [3, 1]);
    assert.deepEqual(resolveGpus(parseGpuChoice('ALL'), [0]), [0]);
  });

  test('what cannot be read or does not fit says so, naming the machine\'s GPUs', () => {
    assert.throws(() => parseGpuChoice('0'), /--gpus takes all, a count from 1/);
    assert.throws(() => parseGpuChoice('two'), /--gpus takes all, a count \(2: the first two\)/);
    assert.throws(() => parseGpuChoice('0,0'), /--gpus lists GPU 0 twice/);
    assert.throws(() => resolveGpus(parseGpuChoice('4'), [0, 1]), /--gpus 4: this machine has 2 GPUs \(0, 1\)/);
    assert.throws(() => resolveGpus(parseGpuChoice('0,5'), [0, 1]), /there is no GPU 5; this machine has 2 GPUs/);
    assert.throws(() => resolveGpus(parseGpuChoice('all'), []), /--gpus needs a GPU; this machine has 0 GPUs/);
  });
});
