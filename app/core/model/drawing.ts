// Which models a drawing fits (the Evaluate and Models screens' drawing pad): "Draw a digit" for a model
// trained on MNIST-like digits (one channel, 28x28, ten classes named 0-9), "Draw an input" for any other
// single-channel image classifier (the drawing is scaled to its height and width), none for the rest.

export type DrawingKind = 'digit' | 'input';

const digitLabels = Array.from({ length: 10 }, (_, digit) => String(digit));

/** What the pad offers for a model with this input shape and these class labels (none for regression). */
export function drawingKind(inputShape: readonly number[], labels: readonly string[]): DrawingKind | undefined {
  if (labels.length < 2) return undefined;
  const shape = inputShape.join('x');
  // A pixel CSV read without an image shape gives 784 flat features: still MNIST's digits.
  const digitShaped = shape === '1x28x28' || shape === '784';
  if (digitShaped && labels.length === 10 && labels.every((label, i) => label === digitLabels[i])) return 'digit';
  if (inputShape.length === 3 && inputShape[0] === 1) return 'input';
  return undefined;
}
