// Small synthetic datasets and model specs for the engine tests (seeded, so runs are reproducible).
import type { ModelSpec } from '../../../app/core/model/spec';
import { mulberry32 } from '../../../app/core/data/split';
import type { Dataset } from '../../../app/engine';

/** The seeded PRNG of the data splits (mulberry32), in [0, 1). */
export const random = mulberry32;

function gaussian(next: () => number): number {
  const u = Math.max(next(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * next());
}

/** Two Gaussian blobs in 2-D around (-2,-2) and (2,2), std 1: nearly separable, labels 0/1. */
export function blobs(count: number, seed = 1): Dataset {
  const next = random(seed);
  const features = new Float32Array(count * 2);
  const labels = new Int32Array(count);
  for (let i = 0; i < count; i++) {
    const label = i % 2;
    const center = label === 0 ? -2 : 2;
    labels[i] = label;
    features[2 * i] = center + gaussian(next);
    features[2 * i + 1] = center + gaussian(next);
  }
  return { features, labels };
}

/** 4x4 single-channel images of 4 classes: the bright quadrant is the label, plus noise. */
export function quadrantImages(count: number, seed = 2): Dataset {
  const next = random(seed);
  const features = new Float32Array(count * 16);
  const labels = new Int32Array(count);
  for (let i = 0; i < count; i++) {
    const label = i % 4;
    labels[i] = label;
    const rowStart = label < 2 ? 0 : 2;
    const colStart = label % 2 === 0 ? 0 : 2;
    for (let y = 0; y < 4; y++) {
      for (let x = 0; x < 4; x++) {
        const inside = y >= rowStart && y < rowStart + 2 && x >= colStart && x < colStart + 2;
        features[i * 16 + y * 4 + x] = (inside ? 0.8 : 0.1) + 0.1 * next();
      }
    }
  }
  return { features, labels };
}

/** MNIST-sized (784 features, 10 classes) noise around one random template per class. */
export function mnistLike(count: number, seed = 3): Dataset {
  const next = random(seed);
  const templates = Array.from({ length: 10 }, () => Float32Array.from({ length: 784 }, () => next()));
  const features = new Float32Array(count * 784);
  const labels = new Int32Array(count);
  for (let i = 0; i < count; i++) {
    const label = i % 10;
    labels[i] = label;
    const template = templates[label];
    for (let j = 0; j < 784; j++) features[i * 784 + j] = 0.5 * template[j] + 0.5 * next();
  }
  return { features, labels };
}

export const blobSpec: ModelSpec = {
  input: [2],
  layers: [
    { kind: 'dense', units: 8, activation: 'relu' },
    { kind: 'dense', units: 2 },
  ],
  loss: 'softmax_cross_entropy',
  optimizer: { kind: 'adam', lr: 0.01 },
  seed: 7,
};

/** The same blobs with one sigmoid output unit and binary cross-entropy. */
export const binaryBlobSpec: ModelSpec = {
  input: [2],
  layers: [
    { kind: 'dense', units: 8, activation: 'tanh' },
    { kind: 'dense', units: 1 },
  ],
  loss: 'binary_cross_entropy',
  optimizer: { kind: 'sgd', lr: 0.1, momentum: 0.9 },
  seed: 3,
};

export const quadrantSpec: ModelSpec = {
  input: [1, 4, 4],
  layers: [
    { kind: 'conv2d', filters: 4, kernel: [3, 3], padding: 'same', activation: 'relu' },
    { kind: 'maxpool2d', size: 2 },
    { kind: 'flatten' },
    { kind: 'dense', units: 4, activation: 'softmax' },
  ],
  loss: 'softmax_cross_entropy',
  optimizer: { kind: 'adam', lr: 0.01 },
  seed: 11,
};

/** The `mlp` benchmark shape: 784-hidden relu-10. */
export function mlpSpec(hidden = 128): ModelSpec {
  return {
    input: [784],
    layers: [
      { kind: 'dense', units: hidden, activation: 'relu' },
      { kind: 'dense', units: 10 },
    ],
    loss: 'softmax_cross_entropy',
    optimizer: { kind: 'sgd', lr: 0.05 },
    seed: 5,
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
