// The session's workspace: what the screens are editing and showing (the selected dataset, split and
// missing-cell choices, the model's layers and settings, the training settings, the run watched and the
// evaluation shown; the screen a tab shows is the tab's own). It lives on the server so that a reload or a second tab finds it; the renderer owns
// its meaning, the server keeps it, validates it here and hands it to every tab. A project file stores it.
import { z } from 'zod';
import { earlyStoppingMonitors } from '../core/model/trainingControl';
import { precisionSchema } from '../core/model/precision';

const id = z.string().min(1).max(100);
const name = z.string().max(200);
const draftNumber = z.number().finite().nullable();

/** A layer as the editor holds it: a kind and its fields (numbers, names, small tuples); the spec check is models:check's. */
const fieldValue = z.union([z.string().max(100), z.number().finite(), z.boolean(), z.null(), z.array(z.number().finite()).max(4)]);
const plainLayerDraft = z
  .record(z.string().max(40), fieldValue)
  .refine((layer) => typeof layer.kind === 'string', 'a layer needs a kind')
  .refine((layer) => Object.keys(layer).length <= 16, 'a layer has at most 16 fields');
/** A top-level layer: a plain one, or a residual block whose `layers` are plain ones (blocks do not nest). */
const layerDraft = z
  .record(z.string().max(40), z.union([fieldValue, z.array(plainLayerDraft).max(50)]))
  .refine((layer) => typeof layer.kind === 'string', 'a layer needs a kind')
  .refine((layer) => Object.keys(layer).length <= 16, 'a layer has at most 16 fields')
  .refine((layer) => Object.entries(layer).every(([key, value]) => !Array.isArray(value) || key !== 'layers' || layer.kind === 'residual'), 'only a residual block has layers')
  .refine((layer) => Object.entries(layer).every(([key, value]) => !Array.isArray(value) || value.every((item) => typeof item === 'number') || key === 'layers'), 'a list of layers belongs in `layers`');

const modelDraft = z.strictObject({
  layers: z.array(layerDraft).max(200),
  settings: z.strictObject({
    loss: z.string().max(40),
    optimizer: z.enum(['sgd', 'adam', 'adamw']),
    lr: draftNumber,
    momentum: draftNumber,
    nesterov: z.boolean().optional(),
    labelSmoothing: draftNumber.optional(),
    weightDecay: draftNumber,
    seed: draftNumber,
  }),
  presetName: name.optional(),
});

const scheduleDraft = z.strictObject({
  kind: z.enum(['constant', 'step', 'cosine', 'onecycle']),
  everyEpochs: draftNumber,
  gamma: draftNumber,
  minLr: draftNumber,
  maxLr: draftNumber,
  pctStart: draftNumber,
  divFactor: draftNumber,
  finalDivFactor: draftNumber,
});

const trainingDraft = z.strictObject({
  batchSize: draftNumber,
  epochs: draftNumber,
  device: z.enum(['auto', 'cpu', 'cuda']),
  schedule: scheduleDraft,
  earlyStopping: z.strictObject({
    monitor: z.enum(['off', ...earlyStoppingMonitors]),
    patience: draftNumber,
    minDelta: draftNumber,
    restoreBest: z.boolean(),
  }),
  augment: z.strictObject({ translate: draftNumber, flip: z.boolean(), rotate: draftNumber, scale: draftNumber, erase: draftNumber }).optional(),
  ema: draftNumber.optional(),
  gpus: z.array(z.number().int().min(0).max(1023)).max(1024).optional(),
  precision: precisionSchema.optional(),
});

const fillDraft = z.strictObject({
  strategy: z.enum(['iterative', 'median', 'mean', 'most_frequent', 'constant']),
  fillValue: draftNumber,
  indicator: z.boolean(),
});
const columnFillDraft = z.strictObject({
  strategy: z.enum(['iterative', 'median', 'mean', 'most_frequent', 'constant', 'default']),
  fillValue: draftNumber,
  indicator: z.boolean().nullable(),
});
const imputationDraft = z.strictObject({ all: fillDraft, columns: z.record(z.string().max(200), columnFillDraft) });

export const workspaceSchema = z.strictObject({
  datasetId: id.optional(),
  split: z
    .strictObject({ valSplit: draftNumber, testSplit: draftNumber, normalization: z.record(id, z.enum(['none', 'minmax', 'zscore'])) })
    .optional(),
  imputation: z.record(id, imputationDraft).optional(),
  model: modelDraft.optional(),
  training: trainingDraft.optional(),
  /** The run the Train screen shows (running or finished). */
  watchedRunId: id.optional(),
  /** The evaluation the Evaluate screen shows: an evaluation:evaluate answer or a run's test set. */
  shownEvaluation: z.union([z.strictObject({ evaluationId: id, title: name }), z.strictObject({ runId: id }), z.strictObject({ searchId: id })]).optional(),
});

export type Workspace = z.infer<typeof workspaceSchema>;

/** A workspace as JSON stays small: bounded by its schema, and by this for the whole. */
export const maxWorkspaceJsonChars = 512 * 1024;
