// Checkpoint files (docs/FILE_FORMAT.md): a model file (safetensors, modelFile.ts) that also holds the
// optimizer's state as tensors (optimizer.velocity.<name> for SGD, optimizer.m.<name> and
// optimizer.v.<name> for Adam; best.<name> for early stopping's best weights) and, beside "nnstudio"
// in __metadata__, a JSON training-state block "nnstudio_checkpoint": epoch, step, seed, learning rate,
// the exact history and the run's description (data, split, options) that the training service needs
// to rebuild the same run. Loading validates everything and names the file; saving is atomic.
import { z } from 'zod';
import {
  decodeModelFile, encodeModel, ModelFileError, readModelFileBytes, writeEncodedFile, type DecodeOptions, type ExtraTensor, type Model,
} from './modelFile';
import { counted, issueText, parseErrorText } from '../files/messages';
import { parameterTable } from './shapes';
import { parseModelSpec } from './spec';
import type { EpochStats, TrainState } from './trainingTypes';

export const checkpointFormatVersion = 1;
export const checkpointMetadataKey = 'nnstudio_checkpoint';

/** One epoch as the engine reports it (exact doubles; a non-finite loss is written as null). */
export type CheckpointEpoch = EpochStats;

/** The engine's TrainState, as a checkpoint keeps it. */
export type TrainingState = TrainState;

export interface Checkpoint<Preprocessing = unknown> {
  /** The model as of the checkpoint (its parameters are state.parameters). */
  model: Model<Preprocessing>;
  state: TrainingState;
  /** What the training service needs to rebuild the run; validated by the service. */
  run: Record<string, unknown>;
}

const finiteOrNull = z.number().nullable();
const epochSchema = z.strictObject({
  epoch: z.number().int().positive(),
  trainLoss: finiteOrNull,
  trainAccuracy: z.number().min(0).max(1),
  validationLoss: finiteOrNull.optional(),
  validationAccuracy: z.number().min(0).max(1).optional(),
  seconds: z.number().nonnegative(),
  learningRate: z.number().nonnegative(),
});

const stateSchema = z.strictObject({
  formatVersion: z.literal(checkpointFormatVersion),
  epoch: z.number().int().positive(),
  step: z.number().int().nonnegative(),
  seed: z.string().regex(/^\d{1,20}$/, 'must be a decimal integer'),
  learningRate: z.number().positive(),
  optimizer: z.enum(['sgd', 'adam', 'adamw']),
  hasBest: z.boolean(),
  /** The run keeps a weight average (ema): tensors ema.<name>. Absent in files written before it. */
  hasEma: z.boolean().optional(),
  history: z.array(epochSchema),
  run: z.record(z.string(), z.unknown()),
});

// A loss that was not finite comes back as the largest double: the engine takes finite numbers only,
// and early stopping then never counts it as an improvement.
const fromJsonLoss = (value: number | null): number => (value === null ? Number.MAX_VALUE : value);
const toJsonLoss = (value: number): number | null => (Number.isFinite(value) ? value : null);

function optimizerTensorNames(kind: 'sgd' | 'adam' | 'adamw'): string[] {
  return kind === 'sgd' ? ['optimizer.velocity'] : ['optimizer.m', 'optimizer.v'];
}

/** The checkpoint as safetensors bytes; throws naming the problem. */
export function encodeCheckpoint(checkpoint: Checkpoint): Buffer {
  const spec = parseModelSpec(checkpoint.model.spec);
  const table = parameterTable(spec);
  const P = table.reduce((sum, tensor) => sum + tensor.size, 0);
  const { state } = checkpoint;
  const groups = optimizerTensorNames(spec.optimizer.kind);
  if (state.optimizerState.length !== groups.length * P) {
    throw new Error(`optimizer state has ${state.optimizerState.length} values, ${spec.optimizer.kind} needs ${groups.length * P}`);
  }
  if (state.bestParameters && state.bestParameters.length !== P) {
    throw new Error(`best weights have ${state.bestParameters.length} values, the model has ${P}`);
  }
  const extra: ExtraTensor[] = [];
  groups.forEach((group, g) => {
    for (const tensor of table) {
      const begin = g * P + tensor.offset;
      extra.push({ name: `${group}.${tensor.name}`, shape: tensor.shape, data: state.optimizerState.subarray(begin, begin + tensor.size) });
    }
  });
  if (state.bestParameters) {
    for (const tensor of table) {
      extra.push({ name: `best.${tensor.name}`, shape: tensor.shape, data: state.bestParameters.subarray(tensor.offset, tensor.offset + tensor.size) });
    }
  }
  if (state.emaParameters) {
    if (state.emaParameters.length !== P) throw new Error(`averaged weights have ${state.emaParameters.length} values, the model has ${P}`);
    for (const tensor of table) {
      extra.push({ name: `ema.${tensor.name}`, shape: tensor.shape, data: state.emaParameters.subarray(tensor.offset, tensor.offset + tensor.size) });
    }
  }
  const block = {
    formatVersion: checkpointFormatVersion,
    epoch: state.epoch,
    step: state.step,
    seed: state.seed,
    learningRate: state.learningRate,
    optimizer: spec.optimizer.kind,
    hasBest: state.bestParameters !== undefined,
    ...(state.emaParameters ? { hasEma: true } : {}),
    history: state.history.map((epoch) => ({
      ...epoch,
      trainLoss: toJsonLoss(epoch.trainLoss),
      ...(epoch.validationLoss !== undefined ? { validationLoss: toJsonLoss(epoch.validationLoss) } : {}),
    })),
    run: checkpoint.run,
  };
  const model = { ...checkpoint.model, parameters: state.parameters };
  return encodeModel(model, extra, { [checkpointMetadataKey]: JSON.stringify(block) });
}

/** Reads checkpoint bytes; every problem throws ModelFileError "<fileName>: <problem>". */
export function decodeCheckpoint<Preprocessing = unknown>(
  bytes: Uint8Array,
  fileName: string,
  options: DecodeOptions<Preprocessing> = {},
): Checkpoint<Preprocessing> {
  const fail = (problem: string): never => {
    throw new ModelFileError(fileName, `${fileName}: ${problem}`);
  };
  // The training-state block first: it says which tensors the file must hold.
  const probe = decodeModelFile(bytes, fileName, options, { tensors: [] }, { allowUnknownTensors: true });
  const text = probe.metadata[checkpointMetadataKey];
  if (text === undefined) fail(`__metadata__ has no "${checkpointMetadataKey}" entry: a model file, but not a checkpoint`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    fail(`metadata "${checkpointMetadataKey}" is not valid JSON (${parseErrorText(error)})`);
  }
  const parsed = stateSchema.safeParse(json);
  if (!parsed.success) {
    return fail(`metadata ${issueText(parsed.error, checkpointMetadataKey)}`);
  }
  const block = parsed.data;
  const spec = probe.model.spec;
  if (block.optimizer !== spec.optimizer.kind) fail(`the training state is for ${block.optimizer}, the model's optimizer is ${spec.optimizer.kind}`);
  if (block.history.length !== block.epoch) fail(`the training state has ${counted(block.history.length, 'epoch')} of history for ${counted(block.epoch, 'epoch')}`);
  block.history.forEach((epoch, i) => {
    if (epoch.epoch !== i + 1) fail(`the training state's history[${i}] is epoch ${epoch.epoch}, expected ${i + 1}`);
  });

  const table = parameterTable(spec);
  const groups = optimizerTensorNames(block.optimizer);
  const layout = [...groups, ...(block.hasBest ? ['best'] : []), ...(block.hasEma ? ['ema'] : [])].flatMap((group) =>
    table.map((tensor) => ({ name: `${group}.${tensor.name}`, shape: tensor.shape })),
  );
  const decoded = decodeModelFile(bytes, fileName, options, { tensors: layout });
  const P = table.reduce((sum, tensor) => sum + tensor.size, 0);
  const gather = (group: string, into: Float32Array, at: number) => {
    for (const tensor of table) into.set(decoded.tensors.get(`${group}.${tensor.name}`)!, at + tensor.offset);
  };
  const optimizerState = new Float32Array(groups.length * P);
  groups.forEach((group, g) => gather(group, optimizerState, g * P));
  let bestParameters: Float32Array | undefined;
  if (block.hasBest) {
    bestParameters = new Float32Array(P);
    gather('best', bestParameters, 0);
  }
  let emaParameters: Float32Array | undefined;
  if (block.hasEma) {
    emaParameters = new Float32Array(P);
    gather('ema', emaParameters, 0);
  }
  const state: TrainingState = {
    epoch: block.epoch,
    step: block.step,
    seed: block.seed,
    learningRate: block.learningRate,
    parameters: decoded.model.parameters,
    optimizerState,
    history: block.history.map((epoch): CheckpointEpoch => ({
      epoch: epoch.epoch,
      trainLoss: fromJsonLoss(epoch.trainLoss),
      trainAccuracy: epoch.trainAccuracy,
      ...(epoch.validationLoss !== undefined ? { validationLoss: fromJsonLoss(epoch.validationLoss) } : {}),
      ...(epoch.validationAccuracy !== undefined ? { validationAccuracy: epoch.validationAccuracy } : {}),
      seconds: epoch.seconds,
      learningRate: epoch.learningRate,
    })),
    ...(bestParameters ? { bestParameters } : {}),
    ...(emaParameters ? { emaParameters } : {}),
  };
  return { model: decoded.model, state, run: block.run };
}

/** Writes atomically (temporary file + rename); errors name the path. */
export async function saveCheckpoint(filePath: string, checkpoint: Checkpoint): Promise<void> {
  await writeEncodedFile(filePath, 'checkpoint', () => encodeCheckpoint(checkpoint));
}

export async function loadCheckpoint<Preprocessing = unknown>(
  filePath: string,
  options: DecodeOptions<Preprocessing> = {},
): Promise<Checkpoint<Preprocessing>> {
  return decodeCheckpoint(await readModelFileBytes(filePath), filePath, options);
}
