// Learning-rate schedules and early stopping as plain JSON, one zod schema each: the engine, the services'
// checkpoints, the UI API's payloads and the renderer share these (the engine's meaning: engine.h).
import { z } from 'zod';
import { countLimits, countSchema } from './countLimits';

export const lrScheduleSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('constant') }),
  /** Multiply the base LR by gamma every `everyEpochs` epochs (defaults 1, 0.1). */
  z.strictObject({ kind: z.literal('step'), everyEpochs: countSchema(countLimits.epochInterval).optional(), gamma: z.number().positive().max(1e6).optional() }),
  /** From the base LR down to minLr (default 0) over the run, on a half cosine. */
  z.strictObject({ kind: z.literal('cosine'), minLr: z.number().nonnegative().finite().optional() }),
  /** PyTorch's OneCycleLR: maxLr (default: the base LR), pctStart 0.3, divFactor 25, finalDivFactor 1e4. */
  z.strictObject({
    kind: z.literal('onecycle'),
    maxLr: z.number().nonnegative().finite().optional(),
    pctStart: z.number().gt(0).lt(1).optional(),
    divFactor: z.number().positive().finite().optional(),
    finalDivFactor: z.number().positive().finite().optional(),
  }),
]);
export type LrSchedule = z.infer<typeof lrScheduleSchema>;

export const earlyStoppingMonitors = ['validationLoss', 'validationAccuracy', 'trainLoss'] as const;
export type EarlyStoppingMonitor = (typeof earlyStoppingMonitors)[number];

export const earlyStoppingSchema = z.strictObject({
  monitor: z.enum(earlyStoppingMonitors),
  /** Epochs without improvement before stopping (default 3). */
  patience: countSchema(countLimits.epochInterval).optional(),
  /** The least change that counts as an improvement (default 0). */
  minDelta: z.number().nonnegative().finite().optional(),
  /** End with the best epoch's weights (default false). */
  restoreBest: z.boolean().optional(),
});
export type EarlyStopping = z.infer<typeof earlyStoppingSchema>;

/**
 * Augmentation of image training batches, on the device that trains, seeded by (seed, global step) so an
 * exact resume sees the same batches (docs/LAYERS.md, recipes). flip is off by default: digits and text
 * must not be mirrored.
 */
export const augmentationSchema = z.strictObject({
  /** Whole-pixel shifts up to this many pixels in each axis, zero padded (pad and crop). */
  translate: z.number().int().min(0).max(64).optional(),
  /** Horizontal mirror with probability 1/2. */
  flip: z.boolean().optional(),
  /** Rotation up to +-rotate degrees. */
  rotate: z.number().min(0).max(180).optional(),
  /** Scaling by 1 +- scale. */
  scale: z.number().min(0).max(0.5).optional(),
  /** Probability of erasing one rectangle (2-33 % of the image). */
  erase: z.number().min(0).max(1).optional(),
});
export type Augmentation = z.infer<typeof augmentationSchema>;

/** The weight average's decay (EMA), used for validation and saved as the model; 0 < ema < 1. */
export const emaSchema = z.number().gt(0).lt(1);

/**
 * The CLI's `--augment translate=2,flip,rotate=10,scale=0.1,erase=0.25`: comma-separated items, `flip` bare.
 * Throws naming the item at fault.
 */
export function parseAugmentation(text: string): Augmentation {
  const result: Record<string, number | boolean> = {};
  const numeric = new Set(['translate', 'rotate', 'scale', 'erase']);
  for (const item of text.split(',').map((s) => s.trim()).filter((s) => s.length > 0)) {
    const [name, value, extra] = item.split('=').map((s) => s.trim());
    if (extra !== undefined) throw new Error(`--augment: "${item}" has more than one "="`);
    if (name === 'flip') {
      if (value !== undefined && value !== 'true' && value !== 'false') throw new Error(`--augment: flip takes no value or true/false, got "${value}"`);
      result.flip = value !== 'false';
    } else if (numeric.has(name)) {
      const number = Number(value);
      if (value === undefined || value === '' || !Number.isFinite(number)) throw new Error(`--augment: ${name} needs a number, e.g. ${name}=${name === 'translate' ? 2 : name === 'rotate' ? 10 : 0.1}`);
      result[name] = number;
    } else {
      throw new Error(`--augment: unknown item "${name}" (expected translate, flip, rotate, scale, erase)`);
    }
  }
  const parsed = augmentationSchema.safeParse(result);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`--augment: ${issue.path.join('.')} ${issue.message}`);
  }
  return parsed.data;
}
