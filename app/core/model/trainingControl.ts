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
