// The drawing pad fits digit models as "Draw a digit", other one-channel image classifiers as "Draw an input".
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { drawingKind } from '../../../app/core/model/drawing';

const digits = Array.from({ length: 10 }, (_, i) => String(i));

test('a digit model: one channel, 28x28 (or 784 pixels), classes 0-9', () => {
  assert.equal(drawingKind([1, 28, 28], digits), 'digit');
  assert.equal(drawingKind([784], digits), 'digit');
});

test('other one-channel image classifiers take a drawing as an input', () => {
  const clothes = ['T-shirt', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle boot'];
  assert.equal(drawingKind([1, 28, 28], clothes), 'input', 'Fashion-MNIST is 28x28 but no digits');
  assert.equal(drawingKind([1, 16, 16], digits), 'input');
  assert.equal(drawingKind([1, 28, 28], ['0', '1', '2']), 'input');
});

test('colour images, tables and regression models get no drawing', () => {
  assert.equal(drawingKind([3, 28, 28], digits), undefined);
  assert.equal(drawingKind([4], ['a', 'b']), undefined);
  assert.equal(drawingKind([784], ['a', 'b']), undefined);
  assert.equal(drawingKind([1, 28, 28], []), undefined);
});
