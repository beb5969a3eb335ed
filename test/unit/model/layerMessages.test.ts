// The model editor's words for a layer at fault, and the item each parsed layer came from.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { counted } from '../../../app/core/files/messages';
import { layerProblem, plainReason } from '../../../app/core/model/layerMessages';
import { LayerSyntaxError, parseLayerItems } from '../../../app/core/model/layerSyntax';

test('reasons in plain words', () => {
  assert.equal(plainReason('units "0" is not a positive integer'), 'units must be at least 1');
  assert.equal(plainReason('stride "-2" is not a positive integer'), 'stride must be at least 1');
  assert.equal(plainReason('units "null" is not a positive integer'), 'units must be a whole number of at least 1');
  assert.equal(plainReason('rate "-0.1" is not a non-negative number'), 'rate must be a number of at least 0');
  assert.equal(plainReason('rate 1 must be below 1'), 'rate must be below 1');
  assert.equal(plainReason('kernel 5x5 larger than input 4x4 (padding valid)'), 'kernel 5x5 larger than input 4x4 (padding valid)');
});

test('a layer named by its number and kind; an added flatten by the layer it precedes', () => {
  assert.equal(layerProblem(5, 'dense', 'units "0" is not a positive integer'), 'Layer 6 (dense): units must be at least 1');
  assert.equal(layerProblem(1, 'maxpool2d', 'window 3x3 larger than input 2x2'), 'Layer 2 (max pooling): window 3x3 larger than input 2x2');
  assert.equal(layerProblem(undefined, 'flatten', 'output 1x2 is too large', 2), 'The flatten added before layer 3: output 1x2 is too large');
});

test('parseLayerItems: the item of every layer; a syntax error tells its item, kind and reason', () => {
  assert.deepEqual(parseLayerItems('conv:4x3,dense:8,dense:2', [1, 8, 8]).items, [0, undefined, 1, 2]);
  assert.deepEqual(parseLayerItems('dense:8,dense:2', [4]).items, [0, 1]);
  assert.throws(() => parseLayerItems('dense:8,maxpool:0', [1, 8, 8]), (error: unknown) => {
    assert.ok(error instanceof LayerSyntaxError);
    assert.deepEqual(error.place, { item: 1, kind: 'maxpool2d', reason: 'window size "0" is not a positive integer' });
    assert.equal(error.message, '--layers: item 2 "maxpool:0": window size "0" is not a positive integer', 'the CLI keeps its message');
    return true;
  });
});

test('counts with their noun: one epoch, two epochs', () => {
  assert.equal(counted(1, 'epoch'), '1 epoch');
  assert.equal(counted(0, 'epoch'), '0 epochs');
  assert.equal(counted(2, 'class', 'classes'), '2 classes');
});
