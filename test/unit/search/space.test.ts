import assert from 'node:assert/strict';
import { test } from 'node:test';
import { augmentationOf, defaultSearchSpace, drawTrials, hiddenLayers, maxImageDepth, searchSpaceSchema } from '../../../app/core/search/space';

test('the same seed draws the same trials; another seed others; every value inside the space', () => {
  const space = defaultSearchSpace('table');
  const a = drawTrials(space, 40, 7);
  assert.deepEqual(drawTrials(space, 40, 7), a);
  assert.notDeepEqual(drawTrials(space, 40, 8), a);
  assert.deepEqual(a.map((t) => t.trial), Array.from({ length: 40 }, (_, i) => i + 1));
  for (const t of a) {
    assert.ok(t.depth >= space.depth[0] && t.depth <= space.depth[1], `depth ${t.depth}`);
    assert.ok(space.widths.includes(t.width) && space.batchSizes.includes(t.batchSize) && space.schedules.includes(t.schedule));
    assert.ok(t.lr >= space.lr[0] * 0.999 && t.lr <= space.lr[1] * 1.001, `lr ${t.lr}`);
    assert.ok(t.weightDecay === 0 || (t.weightDecay >= space.weightDecay[0] * 0.99 && t.weightDecay <= space.weightDecay[1] * 1.01), `decay ${t.weightDecay}`);
  }
  const none = a.filter((t) => t.weightDecay === 0).length;
  assert.ok(none > 0 && none < 40, `some draws without weight decay, not all: ${none}`);
  assert.ok(new Set(a.map((t) => t.lr)).size > 30, 'learning rates spread');
});

test('images: blocks of conv + max pool with doubling filters, the depth capped where the image would fall under 2 pixels', () => {
  assert.equal(maxImageDepth(28, 28), 3);
  assert.equal(maxImageDepth(8, 8), 2);
  assert.equal(maxImageDepth(3, 3), 0);
  const space = { ...defaultSearchSpace('image'), depth: [3, 3] as [number, number] };
  assert.ok(drawTrials(space, 10, 1, 2).every((t) => t.depth === 2));
  const [trial] = drawTrials(space, 1, 1);
  assert.deepEqual(hiddenLayers({ ...trial, depth: 2, width: 16 }, 'image'), ['conv:16x3:same:relu', 'maxpool:2', 'conv:32x3:same:relu', 'maxpool:2', 'dense:128:relu']);
  assert.deepEqual(hiddenLayers({ ...trial, depth: 2, width: 64 }, 'table'), ['dense:64:relu', 'dense:64:relu']);
  assert.deepEqual(hiddenLayers({ ...trial, depth: 0, width: 64 }, 'table'), []);
  assert.equal(augmentationOf('none'), undefined);
  assert.deepEqual(augmentationOf('light'), { translate: 1 });
});

test('a space given by a face is checked: ranges in order, choices from the lists', () => {
  assert.ok(searchSpaceSchema.safeParse(defaultSearchSpace('image')).success);
  assert.ok(!searchSpaceSchema.safeParse({ ...defaultSearchSpace('table'), lr: [0.1, 0.01] }).success);
  assert.ok(!searchSpaceSchema.safeParse({ ...defaultSearchSpace('table'), schedules: ['warmup'] }).success);
  assert.ok(!searchSpaceSchema.safeParse({ ...defaultSearchSpace('table'), widths: [] }).success);
});
