// A run with batchnorm and few steps an epoch says up front that validation can trail training (the running
// statistics lag the weights); a run with enough steps, or without batchnorm, says nothing.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildModelSpec } from '../../../app/services/modelSpecs';
import { batchnormLagNotes } from '../../../app/services/trainingSetup';

const resnet = buildModelSpec({ preset: 'resnet_fast' }, [1, 28, 28], 10).spec;
const plainBatchnorm = buildModelSpec({ layers: 'conv:8x3:relu,bn,flatten,dense:10' }, [1, 8, 8], 10).spec;
const noBatchnorm = buildModelSpec({ layers: 'conv:8x3:relu,flatten,dense:10' }, [1, 8, 8], 10).spec;

describe('the batchnorm note', () => {
  test('batchnorm inside residual blocks or at the top level, 10 steps an epoch: noted with the step count and what helps', () => {
    for (const spec of [resnet, plainBatchnorm]) {
      const notes = batchnormLagNotes(spec, 1258, 128);
      assert.equal(notes.length, 1);
      assert.match(notes[0]!, /^batchnorm with only 10 steps an epoch: .*validation can stay far below training.*more epochs or a smaller batch size help$/);
    }
    assert.match(batchnormLagNotes(plainBatchnorm, 100, 128)[0]!, /only 1 step an epoch/, 'one step, singular');
  });

  test('enough steps, or no batchnorm: no note', () => {
    assert.deepEqual(batchnormLagNotes(resnet, 60000, 128), [], 'MNIST: 469 steps an epoch');
    assert.deepEqual(batchnormLagNotes(resnet, 50 * 32, 32), [], '50 steps');
    assert.equal(batchnormLagNotes(resnet, 49 * 32, 32).length, 1, '49 steps');
    assert.deepEqual(batchnormLagNotes(noBatchnorm, 1258, 128), []);
  });
});
