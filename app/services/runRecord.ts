// What a checkpoint keeps about its run so that `resumeFrom` rebuilds the very same run: the data
// source(s), split, normalisation kind, seed, batch size, epochs, schedule and early stopping, plus a
// digest and the counts of the training split so that changed data is refused with a clear message.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Dataset } from '../core/data/dataset';
import { normalizationKinds } from '../core/data/preprocess';
import { countLimits, countSchema } from '../core/model/countLimits';
import { precisionSchema, type Precision } from '../core/model/precision';
import { augmentationSchema, earlyStoppingSchema, emaSchema, lrScheduleSchema, type Augmentation, type EarlyStopping, type LrSchedule } from '../core/model/trainingControl';
import type { DataSource } from './dataSources';

export interface RunRecord {
  data: DataSource;
  testData?: DataSource;
  normalize: (typeof normalizationKinds)[number];
  valSplit: number;
  testSplit: number;
  seed: number;
  epochs: number;
  batchSize: number;
  threads: number;
  /** The device the run trained on (trainingSetup's resumeDevice); absent in older checkpoints. */
  device?: 'cpu' | 'cuda';
  lrSchedule?: LrSchedule;
  earlyStopping?: EarlyStopping;
  /** Classification loss weights as asked ('balanced' or one per class). */
  classWeights?: 'balanced' | number[];
  /** Augmentation of the training batches and the weight average's decay: a resume needs the same. */
  augment?: Augmentation;
  ema?: number;
  /** The GPUs a data-parallel run trained on: the steps of an epoch depend on their count, so a resume takes them again. */
  gpus?: number[];
  /** The tensor-core arithmetic the run computed with (a resume keeps it); absent (older checkpoints): fp32. */
  precision?: Precision;
  /** The share of the training split the run trained on (a search's screening rung); absent: all of it. */
  trainShare?: number;
  /** sha256 of the training split's features and labels (before normalisation). */
  trainDigest: string;
  counts: { train: number; validation: number; test: number };
}

const columnRef = z.union([z.string(), z.number().int()]);
const classNames = z.array(z.string().min(1)).min(1).optional();
const dataSourceSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('mnist'), split: z.enum(['train', 'test']), limit: z.number().int().positive().optional(), classNames }),
  z.strictObject({
    kind: z.literal('idx'), imagesPath: z.string().min(1), labelsPath: z.string().min(1).optional(),
    limit: z.number().int().positive().optional(), classNames,
    test: z.strictObject({ imagesPath: z.string().min(1), labelsPath: z.string().min(1).optional() }).optional(),
  }),
  // CSV options are checked again by the loader; here only their outline
  z.strictObject({ kind: z.literal('csv'), path: z.string().min(1), options: z.looseObject({ labelColumn: columnRef.optional() }).optional() }),
]);

const runRecordSchema = z.strictObject({
  data: dataSourceSchema,
  testData: dataSourceSchema.optional(),
  normalize: z.enum(normalizationKinds),
  valSplit: z.number().min(0).lt(1),
  testSplit: z.number().min(0).lt(1),
  seed: countSchema(countLimits.seed),
  epochs: countSchema(countLimits.epochs),
  batchSize: countSchema(countLimits.batchSize),
  threads: countSchema(countLimits.threads),
  device: z.enum(['cpu', 'cuda']).optional(),
  lrSchedule: lrScheduleSchema.optional(),
  earlyStopping: earlyStoppingSchema.optional(),
  classWeights: z.union([z.literal('balanced'), z.array(z.number().positive().finite()).min(1)]).optional(),
  augment: augmentationSchema.optional(),
  ema: emaSchema.optional(),
  gpus: z.array(z.number().int().nonnegative()).min(2).max(64).optional(),
  trainShare: z.number().gt(0).lt(1).optional(),
  precision: precisionSchema.optional(),
  trainDigest: z.string().regex(/^[0-9a-f]{64}$/),
  counts: z.strictObject({ train: z.number().int().positive(), validation: z.number().int().nonnegative(), test: z.number().int().nonnegative() }),
});

/** Validates a checkpoint's run record; errors name the file and the field. */
export function parseRunRecord(value: unknown, fileName: string): RunRecord {
  const parsed = runRecordSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${fileName}: metadata ${['nnstudio_checkpoint', 'run', ...issue.path].join('.')}: ${issue.message}`);
  }
  return parsed.data as RunRecord;
}

export function datasetDigest(dataset: Dataset): string {
  const hash = createHash('sha256');
  hash.update(new Uint8Array(dataset.features.buffer, dataset.features.byteOffset, dataset.features.byteLength));
  hash.update(new Uint8Array(dataset.labels.buffer, dataset.labels.byteOffset, dataset.labels.byteLength));
  return hash.digest('hex');
}
