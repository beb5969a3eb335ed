// A hyperparameter search's space and its seeded draws (issue 16): depth and widths, learning rate and
// schedule, batch size, weight decay and, for images, augmentation strength. A draw is a plain record
// that turns into a TrainRequest's model and settings (services/search.ts); the same seed draws the
// same trials.
import { z } from 'zod';
import { mulberry32 } from '../data/split';
import type { Augmentation } from '../model/trainingControl';

export const scheduleChoices = ['constant', 'cosine', 'onecycle'] as const;
export const augmentLevels = ['none', 'light', 'medium'] as const;
export type ScheduleChoice = (typeof scheduleChoices)[number];
export type AugmentLevel = (typeof augmentLevels)[number];

const range = (low: number, high: number) =>
  z.tuple([z.number().min(low).max(high), z.number().min(low).max(high)]).refine(([a, b]) => a <= b, 'a range is [low, high] with low <= high');

export const searchSpaceSchema = z.strictObject({
  /** Hidden dense layers (tables) or conv + max pool blocks (images), both ends included. */
  depth: range(0, 6),
  /** Units of each hidden layer (tables), or the first block's filters, doubled per block (images). */
  widths: z.array(z.number().int().min(1).max(4096)).min(1),
  /** The learning rate, drawn log-uniformly. */
  lr: range(1e-6, 1),
  schedules: z.array(z.enum(scheduleChoices)).min(1),
  batchSizes: z.array(z.number().int().min(1).max(65536)).min(1),
  /** AdamW's decoupled weight decay, drawn log-uniformly; a quarter of the draws take none. */
  weightDecay: range(1e-7, 1),
  /** Images: shifts, then shifts with small rotations and scaling. */
  augment: z.array(z.enum(augmentLevels)).min(1),
});
export type SearchSpace = z.infer<typeof searchSpaceSchema>;

export type DataKind = 'table' | 'image';

export function defaultSearchSpace(kind: DataKind): SearchSpace {
  return kind === 'image'
    ? { depth: [1, 3], widths: [8, 16, 32], lr: [3e-4, 1e-2], schedules: ['constant', 'onecycle'], batchSizes: [64, 128, 256], weightDecay: [1e-5, 1e-2], augment: ['none', 'light', 'medium'] }
    : { depth: [1, 3], widths: [32, 64, 128, 256], lr: [1e-4, 3e-2], schedules: ['constant', 'cosine', 'onecycle'], batchSizes: [16, 32, 64, 128], weightDecay: [1e-6, 1e-2], augment: ['none'] };
}

/** One trial's hyperparameters. */
export interface TrialConfig {
  /** 1-based, in draw order. */
  trial: number;
  depth: number;
  width: number;
  lr: number;
  schedule: ScheduleChoice;
  batchSize: number;
  /** 0: none. */
  weightDecay: number;
  augment: AugmentLevel;
}

/**
 * `count` trials from the space, seeded. Images cap the depth where another pooling would leave less
 * than 2 pixels (`maxImageDepth`).
 */
export function drawTrials(space: SearchSpace, count: number, seed: number, maxDepth = Infinity): TrialConfig[] {
  const random = mulberry32((seed ^ 0x5ea4c4) >>> 0);
  const pick = <T>(choices: readonly T[]): T => choices[Math.floor(random() * choices.length)];
  const logUniform = ([low, high]: readonly [number, number]) => Math.exp(Math.log(low) + random() * (Math.log(high) - Math.log(low)));
  const [lowDepth, highDepth] = [Math.min(space.depth[0], maxDepth), Math.min(space.depth[1], maxDepth)];
  const trials: TrialConfig[] = [];
  for (let trial = 1; trial <= count; trial++) {
    const depth = lowDepth + Math.floor(random() * (highDepth - lowDepth + 1));
    const width = pick(space.widths);
    const lr = roundTo(logUniform(space.lr), 3);
    const schedule = pick(space.schedules);
    const batchSize = pick(space.batchSizes);
    const decayDraw = random();
    const weightDecay = decayDraw < 0.25 ? 0 : roundTo(logUniform(space.weightDecay), 2);
    const augment = pick(space.augment);
    trials.push({ trial, depth, width, lr, schedule, batchSize, weightDecay, augment });
  }
  return trials;
}

/** The deepest stack of 2x2 max pools an image of this height and width keeps at least 2 pixels through. */
export function maxImageDepth(height: number, width: number): number {
  return Math.max(0, Math.floor(Math.log2(Math.min(height, width))) - 1);
}

/** The hidden layers in the compact layer syntax (docs/LAYERS.md), without the head. */
export function hiddenLayers(config: TrialConfig, kind: DataKind): string[] {
  if (kind === 'table') return Array.from({ length: config.depth }, () => `dense:${config.width}:relu`);
  const blocks = Array.from({ length: config.depth }, (_, i) => [`conv:${config.width * 2 ** i}x3:same:relu`, 'maxpool:2']).flat();
  return [...blocks, 'dense:128:relu'];
}

export function augmentationOf(level: AugmentLevel): Augmentation | undefined {
  if (level === 'light') return { translate: 1 };
  if (level === 'medium') return { translate: 2, rotate: 10, scale: 0.1 };
  return undefined;
}

/** `x` to `digits` significant digits, so that a trial's settings read as a person would write them. */
function roundTo(x: number, digits: number): number {
  return Number(x.toPrecision(digits));
}
