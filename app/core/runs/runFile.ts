// Run history files (docs/FILE_FORMAT.md, "Run files"): one JSON file per finished training run, with what
// was trained (spec, options, data), how it went (per-epoch history, status) and how well (test metrics),
// and the name of the model file saved beside it. Pure: no file system here (app/services/runs.ts stores).
import { regressionReportSchema, type RegressionReport } from '../metrics/regression';
import { z } from 'zod';
import { issueText, parseErrorText, valueText } from '../files/messages';
import { classificationReportSchema, type ClassificationReport } from '../metrics/classification';
import { formatLayers } from '../model/layerSyntax';
import { epochRecordSchema, type EpochRecord } from '../model/modelFile';
import { parameterCount } from '../model/shapes';
import { modelSpecSchema, type ModelSpec } from '../model/spec';

export const runFormatVersion = 1;

/** How a run ended; a run that never started (bad data, bad model) leaves no file. */
export const runStatuses = ['completed', 'cancelled', 'diverged', 'early-stopped'] as const;
export type RunStatus = (typeof runStatuses)[number];

/** A run id is its file's name without ".json": letters, digits, '-' and '_' only, so it never leaves the folder. */
export const runIdPattern = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;

export interface RunOptions {
  /** Epochs asked for (the history says how many ran). */
  epochs: number;
  batchSize: number;
  optimizer: 'sgd' | 'adam' | 'adamw';
  lr: number;
  seed: number;
  /** Where it trained ('cpu' or 'cuda') and the device's own name ("NVIDIA H100 80GB HBM3", "cpu (16 threads)"). */
  device: string;
  deviceName: string;
  normalize: string;
  valSplit: number;
  /** 0 when a separate test set was used. */
  testSplit: number;
  /** The preset the model came from, when it came from one. */
  preset?: string;
  /** Later options (schedules, early stopping, ...) are kept as the training record gave them. */
  [extra: string]: unknown;
}

export interface RunData {
  /** Short, for tables: "iris.csv", "MNIST train (5000)". */
  name: string;
  /** As the CLI describes it: a path, "built-in MNIST (60 000 training images)". */
  description: string;
  /** The separate test set, when there was one. */
  testDescription?: string;
  kind: 'images' | 'table';
  inputShape: number[];
  classLabels: string[];
  trainCount: number;
  validationCount: number;
  testCount: number;
}

export interface RunTest {
  /** null when the loss was not finite. */
  loss: number | null;
  /** Empty for a regression run, whose metrics are in `regression`. */
  report: ClassificationReport;
  regression?: RegressionReport;
}

export interface RunRecord {
  formatVersion: typeof runFormatVersion;
  id: string;
  name: string;
  /** ISO 8601 times: when the run started and when it ended. */
  createdAt: string;
  finishedAt: string;
  status: RunStatus;
  /** Why it stopped early; empty when it completed. */
  message: string;
  spec: ModelSpec;
  options: RunOptions;
  data: RunData;
  history: EpochRecord[];
  /** Training seconds as the engine measured them (data loading and testing not included). */
  seconds: number;
  test: RunTest | null;
  /** The model file's name, in the run file's folder ("<id>.safetensors"); null when none was kept. */
  modelFile: string | null;
}

/** A run file that cannot be read; the message starts with the file's name. */
export class RunFileError extends Error {
  constructor(readonly file: string, message: string) {
    super(`${file}: ${message}`);
    this.name = 'RunFileError';
  }
}

// ---- schema ----

const isoTime = z.string().refine((text) => !Number.isNaN(Date.parse(text)), 'expected an ISO 8601 time');
const count = z.number().int().nonnegative();

const optionsSchema = z.looseObject({
  epochs: z.number().int().positive(),
  batchSize: z.number().int().positive(),
  optimizer: z.enum(['sgd', 'adam', 'adamw']),
  lr: z.number().positive(),
  seed: count,
  device: z.string(),
  deviceName: z.string(),
  normalize: z.string(),
  valSplit: z.number().min(0).lt(1),
  testSplit: z.number().min(0).lt(1),
  preset: z.string().optional(),
});

const dataSchema = z.looseObject({
  name: z.string(),
  description: z.string(),
  testDescription: z.string().optional(),
  kind: z.enum(['images', 'table']),
  inputShape: z.array(z.number().int().positive()).min(1),
  classLabels: z.array(z.string()),
  trainCount: count,
  validationCount: count,
  testCount: count,
});

// Loose at the top too: a later NN Studio may add fields without a new version (readers ignore them).
const recordSchema = z.looseObject({
  formatVersion: z.literal(runFormatVersion),
  id: z.string().regex(runIdPattern, 'letters, digits, "-" and "_" only'),
  name: z.string(),
  createdAt: isoTime,
  finishedAt: isoTime,
  status: z.enum(runStatuses),
  message: z.string(),
  spec: modelSpecSchema,
  options: optionsSchema,
  data: dataSchema,
  history: z.array(epochRecordSchema),
  seconds: z.number().nonnegative(),
  test: z.strictObject({ loss: z.number().nullable(), report: classificationReportSchema, regression: regressionReportSchema.optional() }).nullable(),
  modelFile: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*\.safetensors$/, 'a file name in the runs folder').nullable(),
});

// ---- encoding and decoding ----

/** The file's text: the record, validated (a bad record is a bug; it must not reach the disk), 2-space JSON. */
export function encodeRun(record: RunRecord): string {
  const parsed = recordSchema.safeParse(record);
  if (!parsed.success) throw new RunFileError(`${record.id}.json`, issueText(parsed.error, '', 'record'));
  return `${JSON.stringify(record, null, 2)}\n`;
}

/**
 * Reads a run file's text. `file` names it in messages; when it ends in "<id>.json" the record's id must be
 * that id (the CLI and the UI find a run by its file name). Throws a RunFileError on the first problem.
 */
export function decodeRun(text: string, file: string): RunRecord {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new RunFileError(file, `not valid JSON (${parseErrorText(error)})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new RunFileError(file, 'not a JSON object');
  const version = (value as { formatVersion?: unknown }).formatVersion;
  if (version === undefined) throw new RunFileError(file, 'no formatVersion: not an NN Studio run file');
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) throw new RunFileError(file, `formatVersion ${valueText(version)} is not a version number`);
  if (version !== runFormatVersion) {
    throw new RunFileError(file, `format version ${version} is not supported: this NN Studio reads version ${runFormatVersion}${version > runFormatVersion ? ' (written by a newer NN Studio)' : ''}`);
  }
  const parsed = recordSchema.safeParse(value);
  if (!parsed.success) throw new RunFileError(file, issueText(parsed.error, '', 'record'));
  const record = parsed.data as unknown as RunRecord;
  try {
    parameterCount(record.spec); // the run list shows it: the layers must fit together
  } catch (error) {
    throw new RunFileError(file, `spec: ${(error as Error).message}`);
  }
  const base = file.replace(/^.*[\\/]/, '');
  if (base.endsWith('.json') && base.slice(0, -'.json'.length) !== record.id) {
    throw new RunFileError(file, `id "${record.id}" does not match the file name (expected ${record.id}.json)`);
  }
  return record;
}


// ---- ids and summaries ----

/** A new id that sorts by start time: "20250314-093015-a1b2" (UTC), `suffix` 4 hex digits to tell same-second runs apart. */
export function newRunId(startedAt: Date, suffix: string): string {
  const pad = (value: number) => String(value).padStart(2, '0');
  const date = `${startedAt.getUTCFullYear()}${pad(startedAt.getUTCMonth() + 1)}${pad(startedAt.getUTCDate())}`;
  const time = `${pad(startedAt.getUTCHours())}${pad(startedAt.getUTCMinutes())}${pad(startedAt.getUTCSeconds())}`;
  return `${date}-${time}-${suffix}`;
}

/** One line of a listing: what a table shows without the history and the confusion matrix. */
export interface RunSummary {
  id: string;
  name: string;
  createdAt: string;
  finishedAt: string;
  status: RunStatus;
  data: string;
  /** The preset's name, or the layers in the compact syntax. */
  model: string;
  parameters: number;
  /** Epochs that ran / epochs asked for. */
  epochs: number;
  plannedEpochs: number;
  seconds: number;
  device: string;
  testAccuracy: number | null;
  testMacroF1: number | null;
  /** Regression runs: R² on the test set (testAccuracy and testMacroF1 are then 0). */
  testR2?: number;
  testLoss: number | null;
  /** Whether the run kept a model file (Open needs one). */
  hasModel: boolean;
}

export function summarizeRun(record: RunRecord): RunSummary {
  return {
    id: record.id,
    name: record.name,
    createdAt: record.createdAt,
    finishedAt: record.finishedAt,
    status: record.status,
    data: record.data.name,
    model: modelSummary(record.spec, record.options.preset),
    parameters: parameterCount(record.spec),
    epochs: record.history.length,
    plannedEpochs: record.options.epochs,
    seconds: record.seconds,
    device: record.options.deviceName,
    testAccuracy: record.test?.report.accuracy ?? null,
    testMacroF1: record.test?.report.macro.f1 ?? null,
    ...(record.test?.regression ? { testR2: record.test.regression.r2 } : {}),
    testLoss: record.test?.loss ?? null,
    hasModel: record.modelFile !== null,
  };
}

/** "mlp" for a preset; otherwise the layers, shortened to `maxLength` characters. */
export function modelSummary(spec: ModelSpec, preset?: string, maxLength = 60): string {
  if (preset) return preset;
  const layers = formatLayers(spec.layers);
  return layers.length <= maxLength ? layers : `${layers.slice(0, maxLength - 1)}…`;
}
