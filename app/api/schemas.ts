// The gate of the UI API: one zod schema per channel for its payload (DESIGN §5). Nothing reaches a service
// before it passed here. Objects are strict, so a misspelt field is an error naming it, not a silent default.
import { z } from 'zod';
import { imputationStrategies } from '../core/data/imputation';
import { maxClassNameLength } from '../core/data/classNames';
import { maxImageSide } from '../core/data/imageFolder';
import { lossNames } from '../core/model/spec';
import { runIdPattern } from '../core/runs/runFile';
import { augmentationSchema, earlyStoppingSchema, emaSchema, lrScheduleSchema } from '../core/model/trainingControl';
import { countLimits, countSchema } from '../core/model/countLimits';
import { workspaceSchema } from './workspace';
import { searchSpaceSchema } from '../core/search/space';
import { precisionSchema } from '../core/model/precision';

const id = z.string().min(1).max(100);
const positiveInt = z.number().int().positive();
const fraction = z.number().min(0).lt(1);
/** A saved run's id (its file name in the runs folder): never a path. */
const savedRunId = z.string().regex(runIdPattern, 'must be a run id (letters, digits, "-" and "_")');
const columnRef = z.union([z.string().min(1), z.number().int()]);

/** Uploads travel as base64 in one WebSocket message; 256 MiB of base64 is 192 MiB of file. */
export const maxUploadBase64Chars = 256 * 1024 * 1024;

export const csvOptionsSchema = z.strictObject({
  delimiter: z.string().min(1).max(3).optional(),
  /** The numbers' decimal mark (default: sniffed from the file: ',' only when the delimiter is not a comma). */
  decimal: z.enum(['.', ',']).optional(),
  header: z.boolean().optional(),
  labelColumn: columnRef.optional(),
  categorical: z.array(columnRef).optional(),
  ignoreColumns: z.array(columnRef).optional(),
  /** Classification or regression; inferred from the label column when absent. */
  task: z.enum(['classification', 'regression']).optional(),
  /** Regression with several targets: their columns (the label column is then unused). */
  targetColumns: z.array(columnRef).min(1).max(100).optional(),
  /** The file has no label column (rows to predict with a trained model); such a dataset cannot be trained on. */
  unlabeled: z.boolean().optional(),
  /** Cell texts that mean missing (default: empty, NA, N/A, NaN, null, ?, -). */
  missingMarkers: z.array(z.string().max(100)).max(100).optional(),
  /** Date columns as numeric parts or left out (the default). */
  dates: z.enum(['parts', 'ignore']).optional(),
  imageShape: z.tuple([positiveInt, positiveInt, positiveInt]).optional(),
  pixelScale: z.number().positive().finite().optional(),
  limit: positiveInt.optional(),
});

/** A file name only (no folders): the server keeps uploads in its own temporary folder. */
const uploadFileName = z
  .string()
  .min(1)
  .max(255)
  .refine((name) => !/[\\/\0]/.test(name) && name !== '.' && name !== '..', 'must be a file name without folders');
const base64 = z
  .string()
  // abort: a string over the limit is not also scanned by the regex below.
  .max(maxUploadBase64Chars, { message: `too large: an upload may be at most ${maxUploadBase64Chars / 1024 / 1024} MiB of base64 (a file of ${(maxUploadBase64Chars * 3) / 4 / 1024 / 1024} MiB)`, abort: true })
  .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64');

const upload = z.strictObject({ kind: z.literal('upload'), fileName: uploadFileName, base64 });

/** Which GPUs a run trains on: every one, the first N, or these (each at most once). */
const gpusSchema = z.union([
  z.literal('all'),
  z.number().int().min(1).max(1024),
  z.array(z.number().int().min(0).max(1023)).min(1).max(1024)
    .refine((gpus) => new Set(gpus).size === gpus.length, 'lists a GPU twice'),
]);

/** How an image folder is read (docs/DATA.md "Image folders"): [height, width], 1 or 3 channels, crop or letterbox. */
export const imageReadingSchema = z.strictObject({
  size: z.tuple([z.number().int().min(1).max(maxImageSide), z.number().int().min(1).max(maxImageSide)]).optional(),
  channels: z.union([z.literal(1), z.literal(3)]).optional(),
  fit: z.enum(['crop', 'letterbox']).optional(),
});

/** A file's place in an uploaded folder: "cats/001.jpg" ("/"-separated names, none "." or "..", at most 8 deep). */
const relativeFilePath = z
  .string()
  .min(1)
  .max(1024)
  .refine((file) => {
    const parts = file.split('/');
    return parts.length <= 8 && parts.every((part) => part !== '' && part !== '.' && part !== '..' && !/[\\\0:]/.test(part));
  }, 'must be a relative path of names separated by "/" (no "..", no drive, at most 8 deep)');

/** The files of a dropped folder with their paths in it (the browser cannot send a folder's path). */
const uploadedFolder = z
  .strictObject({
    kind: z.literal('folder'),
    /** The folder's name, shown as the dataset's. */
    name: uploadFileName,
    files: z.array(z.strictObject({ path: relativeFilePath, base64 })).min(1).max(100_000),
    image: imageReadingSchema.optional(),
  })
  .refine((folder) => folder.files.reduce((sum, file) => sum + file.base64.length, 0) <= maxUploadBase64Chars, {
    message: `too large: a folder upload may be at most ${maxUploadBase64Chars / 1024 / 1024} MiB of base64 in all`,
    path: ['files'],
  });
/** An IDX labels file sent with its images file (`fileName`/`base64`), written beside it. */
const uploadedLabels = z.strictObject({ fileName: uploadFileName, base64 });

/** An IDX test pair sent with the training pair: the dataset's separate test set (not a dataset of its own). */
const uploadedTestPair = z.strictObject({ images: uploadedLabels, labels: uploadedLabels });

/** Names of classes, one per class in their order (app/core/data/classNames.ts checks count and repeats). */
export const classNamesSchema = z
  .array(z.string().trim().min(1, 'a class name must not be empty').max(maxClassNameLength))
  .min(1)
  .max(10_000);

export const datasetSourceSchema = z.discriminatedUnion('kind', [
  /** A CSV or IDX file, or an image folder (one subfolder per class), on the machine that runs the engine. */
  z.strictObject({
    kind: z.literal('path'), path: z.string().min(1), labelsPath: z.string().min(1).optional(), csv: csvOptionsSchema.optional(),
    image: imageReadingSchema.optional(),
  }),
  /** A file sent by the client (browser upload, drag and drop); an IDX images file may bring its labels and a test pair. */
  upload.extend({ labels: uploadedLabels.optional(), csv: csvOptionsSchema.optional(), test: uploadedTestPair.optional() }),
  /** The built-in MNIST; `limit` keeps the first examples (quick runs). */
  z.strictObject({ kind: z.literal('mnist'), split: z.enum(['train', 'test']).optional(), limit: positiveInt.optional() }),
  /** An image folder sent by the client: its files with their paths (cats/001.jpg), one subfolder per class. */
  uploadedFolder,
]);

export const modelChoiceSchema = z.strictObject({
  /** Compact layer syntax (docs/LAYERS.md) or the course tool's widths. */
  layers: z.string().min(1).max(10_000).optional(),
  preset: z.string().min(1).max(100).optional(),
  loss: z.enum(lossNames).optional(),
  optimizer: z.enum(['sgd', 'adam', 'adamw']).optional(),
  lr: z.number().positive().finite().optional(),
  momentum: fraction.optional(),
  nesterov: z.boolean().optional(),
  weightDecay: z.number().nonnegative().max(10).optional(),
  decoupledWeightDecay: z.boolean().optional(),
  labelSmoothing: z.number().min(0).max(0.5).optional(),
  seed: countSchema(countLimits.seed).optional(),
});

const imputationSetting = z.strictObject({
  strategy: z.enum(imputationStrategies),
  fillValue: z.number().finite().optional(),
  indicator: z.boolean().optional(),
});
/** How missing cells are filled (fitted on the training split): a default and per-column choices. */
const imputationSettingsSchema = z.strictObject({
  default: imputationSetting,
  columns: z.record(z.string().max(10_000), imputationSetting).optional(),
});

const none = z.strictObject({}).optional();

export const payloadSchemas = {
  'devices:list': none,

  'datasets:open': z.strictObject({ source: datasetSourceSchema }),
  'datasets:list': none,
  /** `perClass`: images only, the first this many of each class (the Data screen's thumbnails per class). */
  'datasets:preview': z.strictObject({ datasetId: id, rows: z.number().int().min(0).max(200).optional(), perClass: z.number().int().min(1).max(20).optional() }),
  'datasets:close': z.strictObject({ datasetId: id }),
  /** A CSV table read again from its file with changed options (the task, the dates), replacing the open one. */
  'datasets:reopen': z.strictObject({ datasetId: id, csv: z.strictObject({ task: z.enum(['classification', 'regression']).optional(), dates: z.enum(['parts', 'ignore']).optional() }) }),
  /** The train / validation / test counts training:start would use with these fractions. */
  'datasets:split': z.strictObject({ datasetId: id, testDatasetId: id.optional(), valSplit: fraction.optional(), testSplit: fraction.optional() }),
  /** Names an IDX or MNIST dataset's classes (one per class, in order, unique); runs started later use them. */
  'datasets:setClassNames': z.strictObject({ datasetId: id, classNames: classNamesSchema }),

  'models:presets': none,
  'models:check': z
    .strictObject({
      /** The data the model is for: an open dataset, or its shape and class count. */
      datasetId: id.optional(),
      inputShape: z.array(positiveInt).min(1).max(3).optional(),
      classCount: z.number().int().min(2).optional(),
      model: modelChoiceSchema,
    })
    .refine((payload) => payload.datasetId !== undefined || (payload.inputShape !== undefined && payload.classCount !== undefined), {
      message: 'give datasetId, or inputShape and classCount',
      path: ['datasetId'],
    }),
  'models:list': none,
  /** Writes the model to `path`: its .safetensors file (default), or ONNX (docs/FILE_FORMAT.md). */
  'models:save': z.strictObject({ modelId: id, path: z.string().min(1), format: z.enum(['safetensors', 'onnx']).optional() }),
  /** The model file's bytes, for a browser to save (serve has no path on the client's machine). */
  'models:download': z.strictObject({ modelId: id }),
  /** The model in another format (ONNX, opset 13), for a browser to save: base64 and a file name. */
  'models:export': z.strictObject({ modelId: id, format: z.enum(['onnx']) }),
  /** A .safetensors model file, or the C course tool's model.m (by its extension or content). */
  'models:import': z.strictObject({
    source: z.discriminatedUnion('kind', [z.strictObject({ kind: z.literal('path'), path: z.string().min(1) }), upload]),
  }),

  'training:start': z.strictObject({
    datasetId: id,
    /** A separate test set; otherwise MNIST's test half, or testSplit of the data. */
    testDatasetId: id.optional(),
    model: modelChoiceSchema.optional(),
    normalize: z.enum(['none', 'minmax', 'zscore']).optional(),
    epochs: countSchema(countLimits.epochs).optional(),
    batchSize: countSchema(countLimits.batchSize).optional(),
    valSplit: fraction.optional(),
    testSplit: fraction.optional(),
    seed: countSchema(countLimits.seed).optional(),
    device: z.enum(['auto', 'cpu', 'cuda']).optional(),
    threads: countSchema(countLimits.threads).optional(),
    lrSchedule: lrScheduleSchema.optional(),
    earlyStopping: earlyStoppingSchema.optional(),
    imputation: imputationSettingsSchema.optional(),
    classWeights: z.union([z.literal('balanced'), z.array(z.number().positive().finite()).min(1).max(1000)]).optional(),
    /** Images: random shifts, flips, rotations, scaling and erasing of the training batches. */
    augment: augmentationSchema.optional(),
    /** A weight average (EMA) with this decay, used for validation and kept as the model. */
    ema: emaSchema.optional(),
    /** CUDA: 'all', a count (the first N) or GPU numbers; several train data-parallel (issue 17). */
    gpus: gpusSchema.optional(),
    /** CUDA: the tensor-core products' arithmetic (mixed, the default: BF16 products, FP16 with loss scaling on GPUs without BF16; tf32; fp32; docs/PRECISION.md); the CPU computes in FP32. */
    precision: precisionSchema.optional(),
  }),
  'training:pause': z.strictObject({ runId: id }),
  /** A new base learning rate (the schedule scales with it) from the next step; only while running or paused. */
  'training:setLearningRate': z.strictObject({ runId: id, lr: z.number().positive().max(1e6) }),
  /**
   * Continues a finished run (cancelled, failed, or completed and wanting more epochs) from its last
   * checkpoint, exactly, as a new run; `epochs` is the new total (default: the run's).
   */
  'training:continue': z.strictObject({
    runId: id,
    epochs: countSchema(countLimits.epochs).optional(),
    /** The epochs to train beyond the checkpoint (instead of a new total). */
    moreEpochs: countSchema(countLimits.epochs).optional(),
    device: z.enum(['auto', 'cpu', 'cuda']).optional(),
  }),
  'training:resume': z.strictObject({ runId: id }),
  'training:cancel': z.strictObject({ runId: id }),
  'training:status': z.strictObject({ runId: id }),
  'training:list': none,

  /** A hyperparameter search on an open dataset (docs/SEARCH.md): trials drawn with the seed, successive halving. */
  'search:start': z.strictObject({
    datasetId: id,
    testDatasetId: id.optional(),
    trials: z.number().int().min(1).max(1000).optional(),
    /** Below 1: one pass over that share of the training split. */
    minEpochs: z.union([countSchema(countLimits.epochs), z.number().gt(0).lt(1)]).optional(),
    maxEpochs: countSchema(countLimits.epochs).optional(),
    eta: z.number().int().min(2).max(100).optional(),
    /** Seconds the search may take (no trial starts after them; a week at most). */
    budgetSeconds: z.number().positive().max(7 * 24 * 3600).optional(),
    space: searchSpaceSchema.partial().optional(),
    seed: countSchema(countLimits.seed).optional(),
    valSplit: fraction.optional(),
    testSplit: fraction.optional(),
    device: z.enum(['auto', 'cpu', 'cuda']).optional(),
    precision: precisionSchema.optional(),
    /** Trials training at once (default: 4 on a GPU, 1 on the CPU). */
    parallel: countSchema(countLimits.parallelTrials).optional(),
  }),
  /** Ends the search after the trials that are training; the best so far is tested and kept. */
  'search:cancel': z.strictObject({ searchId: id }),
  'search:status': z.strictObject({ searchId: id }),
  'search:list': none,

  'workspace:get': none,
  /** The whole document, replacing the one kept; `clientId` names the tab (its own workspace:changed comes back with it). */
  'workspace:update': z.strictObject({ clientId: id, state: workspaceSchema }),
  'evaluation:get': z.strictObject({ evaluationId: id }),

  'projects:info': none,
  /** A name (saved in the projects folder) or a path; none: the current project. */
  'projects:save': z.strictObject({ path: z.string().min(1).max(4096).optional() }),
  'projects:open': z.strictObject({ path: z.string().min(1).max(4096) }),

  'evaluation:evaluate': z.strictObject({
    modelId: id,
    datasetId: id,
    device: z.enum(['auto', 'cpu', 'cuda']).optional(),
    /** Test-time augmentation (images): the input and its shifts averaged. */
    tta: z.boolean().optional(),
  }),

  // ---- browsing an evaluation's examples, predicting rows a face sends (the digit canvas) ----
  /** The examples of one confusion-matrix cell (true class `actual`, predicted `predicted`), by confidence. */
  'evaluation:examples': z.strictObject({
    evaluationId: id,
    actual: z.number().int().nonnegative(),
    predicted: z.number().int().nonnegative(),
    /** 'highest': the most confident first (default); 'lowest': the least confident first. */
    order: z.enum(['highest', 'lowest']).optional(),
    limit: z.number().int().min(1).max(200).optional(),
    offset: z.number().int().nonnegative().optional(),
  }),
  /** Class probabilities for rows of raw input values (pixels 0-255 for image models), at most 64 rows. */
  /** Or `image`: an image file (PNG, JPEG, WebP, GIF, BMP, TIFF, AVIF) decoded as the model's training images were. */
  'models:predict': z
    .strictObject({
      modelId: id,
      inputs: z.array(z.array(z.number().finite()).min(1).max(1_000_000)).min(1).max(64).optional(),
      image: z.strictObject({ fileName: uploadFileName, base64 }).optional(),
      device: z.enum(['auto', 'cpu', 'cuda']).optional(),
    })
    .refine((payload) => (payload.inputs === undefined) !== (payload.image === undefined), { message: 'give inputs or image (one of them)', path: ['inputs'] }),

  /** Every row of an open dataset predicted: the CSV `nnstudio predict` writes, with a preview. */
  'models:predictFile': z.strictObject({
    modelId: id,
    datasetId: id,
    /** Also write the CSV there (a path on the engine's machine; the desktop app's save dialog). */
    path: z.string().min(1).optional(),
    device: z.enum(['auto', 'cpu', 'cuda']).optional(),
  }),

  // ---- run history: the runs saved in the user's data folder ----
  'runs:list': none,
  'runs:get': z.strictObject({ runId: savedRunId }),
  'runs:delete': z.strictObject({ runId: savedRunId }),
  /** Loads the run's model into the session's models (evaluate, save, export, compare, the digit canvas). */
  'runs:open': z.strictObject({ runId: savedRunId }),
} as const;

export type PayloadSchemas = typeof payloadSchemas;
export type Channel = keyof PayloadSchemas;
/** What a client sends (optional fields may be left out). */
export type PayloadOf<C extends Channel> = z.input<PayloadSchemas[C]>;
/** What a handler receives after validation. */
export type ParsedPayloadOf<C extends Channel> = z.output<PayloadSchemas[C]>;

export const channels = Object.keys(payloadSchemas) as Channel[];

export function isChannel(name: string): name is Channel {
  return Object.prototype.hasOwnProperty.call(payloadSchemas, name);
}
