// The engine's bounds on the counts of a run (native/src/addon/convert.cpp: trainOptions, evaluate's
// options). The CLI's option parsers, the UI API's schemas and the training service check against these,
// so that an absurd count is refused with a message naming the bound before it reaches the addon.
import { z } from 'zod';

export interface CountLimit {
  readonly min: number;
  readonly max: number;
}

export const countLimits = {
  epochs: { min: 1, max: 1_000_000 },
  /** A batch larger than the data is clamped to the data by the engine. */
  batchSize: { min: 1, max: 2 ** 31 - 1 },
  evaluationBatchSize: { min: 1, max: 2 ** 24 },
  /** 0: one per hardware thread. */
  threads: { min: 0, max: 4096 },
  /** The LR schedule's everyEpochs and early stopping's patience. */
  epochInterval: { min: 1, max: 1_000_000 },
  seed: { min: 0, max: Number.MAX_SAFE_INTEGER },
  /** A search's trials training at once. */
  parallelTrials: { min: 1, max: 16 },
} as const satisfies Record<string, CountLimit>;

/** "must be an integer between 1 and 1000000" */
export function countRange(limit: CountLimit): string {
  return `must be an integer between ${limit.min} and ${limit.max}`;
}

export function isCountWithin(value: number, limit: CountLimit): boolean {
  return Number.isInteger(value) && value >= limit.min && value <= limit.max;
}

/** Throws "<name> must be an integer between <min> and <max>, got <value>" unless `value` is within `limit`. */
export function checkCount(value: number, name: string, limit: CountLimit): number {
  if (!isCountWithin(value, limit)) throw new RangeError(`${name} ${countRange(limit)}, got ${value}`);
  return value;
}

/** A zod number within `limit`, with the one message naming the bound. */
export function countSchema(limit: CountLimit) {
  return z.number().refine((value) => isCountWithin(value, limit), { message: countRange(limit) });
}
