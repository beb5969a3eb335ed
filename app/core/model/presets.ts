// Built-in model presets (resources/presets/*.json) and their adaptation to a dataset.
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { parseModelSpec } from './spec';
import { countLimits, countSchema } from './countLimits';
import { augmentationSchema, lrScheduleSchema, type Augmentation, type LrSchedule } from './trainingControl';
import type { ModelSpec } from './spec';
import { SpecError, formatShape, inferShapes } from './shapes';
import { tooFewClasses } from './defaults';

export interface Preset {
  /** The file's name: what benchmarks, run records and older commands call it (seed000, mlp, ...). */
  name: string;
  /** What people call it ("Tiny CNN"). */
  title: string;
  /** The name the CLI offers first (`--preset tiny-cnn`); `name` stays accepted. */
  cliName: string;
  /** One line in plain words: what it is and what it is for. */
  summary: string;
  /** The layers and recipe in short (conv 2x2x4 same, ...; Adam 1e-3, batch 32). */
  description: string;
  spec: ModelSpec;
  /**
   * The preset's recipe: batch size, epochs, a learning-rate schedule (fast_mnist, the ResNets) and the
   * augmentation of its training images (the ResNets; a request's own augment replaces it). The rest of a
   * recipe lives in the spec: optimizer, weight decay, label smoothing.
   */
  training: { batchSize: number; epochs: number; lrSchedule?: LrSchedule; augment?: Augmentation };
  /** Too slow on a CPU: the bench runs it on CUDA only. */
  gpuOnly?: boolean;
}

const presetFileSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_-]+$/),
  title: z.string().min(1).max(60),
  cliName: z.string().regex(/^[a-z0-9-]+$/),
  summary: z.string().min(1).max(200),
  description: z.string(),
  spec: z.unknown(),
  training: z.strictObject({
    batchSize: countSchema(countLimits.batchSize),
    epochs: countSchema(countLimits.epochs),
    lrSchedule: lrScheduleSchema.optional(),
    augment: augmentationSchema.optional(),
  }),
  gpuOnly: z.boolean().optional(),
});

// ---- locating resources ----

/**
 * The folder holding presets: walks up from this file (dist/app/core/model in a build, app/core/model
 * under ts-node, inside app.asar when packaged) to the first directory containing resources/presets.
 */
export function findPresetsDir(start: string = __dirname): string {
  let directory = path.resolve(start);
  for (;;) {
    const candidate = path.join(directory, 'resources', 'presets');
    if (fs.existsSync(candidate) && fs.statSync(candidate).isDirectory()) return candidate;
    const parent = path.dirname(directory);
    if (parent === directory) {
      throw new Error(`cannot find resources/presets in ${path.resolve(start)} or any folder above it`);
    }
    directory = parent;
  }
}

// ---- loading ----

function loadPresetFile(file: string): Preset {
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`preset ${file}: ${(error as Error).message}`);
  }
  const parsed = presetFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`preset ${file}: at ${issue.path.join('.') || 'top level'}: ${issue.message}`);
  }
  const expectedName = path.basename(file, '.json');
  if (parsed.data.name !== expectedName) {
    throw new Error(`preset ${file}: name "${parsed.data.name}" differs from the file name "${expectedName}"`);
  }
  let spec: ModelSpec;
  try {
    spec = parseModelSpec(parsed.data.spec);
    inferShapes(spec);
  } catch (error) {
    throw new Error(`preset ${file}: ${(error as Error).message}`);
  }
  const preset: Preset = { ...parsed.data, spec };
  if (preset.gpuOnly === undefined) delete preset.gpuOnly;
  return preset;
}

const cache = new Map<string, Preset[]>();

/** Every preset in `directory` (default: the repository's resources/presets), sorted by name. */
export function listPresets(directory?: string): Preset[] {
  const dir = directory ?? findPresetsDir();
  let presets = cache.get(dir);
  if (!presets) {
    presets = fs
      .readdirSync(dir)
      .filter((file) => file.endsWith('.json'))
      .sort()
      .map((file) => loadPresetFile(path.join(dir, file)));
    cache.set(dir, presets);
  }
  return presets.map(clonePreset);
}

function clonePreset(preset: Preset): Preset {
  return structuredClone(preset);
}

/** "tiny-cnn (seed000)": a preset's CLI name with the file name it is also known by. */
export function presetNames(preset: Preset): string {
  return preset.cliName === preset.name ? preset.name : `${preset.cliName} (${preset.name})`;
}

/** The preset called `name`: its CLI name or its file name (seed000 and the like stay accepted); the error lists both. */
export function getPreset(name: string, directory?: string): Preset {
  const presets = listPresets(directory);
  const wanted = name.trim();
  const preset = presets.find((candidate) => candidate.name === wanted || candidate.cliName === wanted.toLowerCase());
  if (!preset) {
    throw new Error(`unknown preset "${name}"; valid presets: ${presets.map(presetNames).join(', ')}`);
  }
  return preset;
}

// ---- adapting to data ----

/** True when the preset's layers need an image input (it has conv2d or pool layers). */
export function isImagePreset(preset: Preset): boolean {
  return preset.spec.layers.some((layer) => layer.kind === 'conv2d' || layer.kind === 'maxpool2d' || layer.kind === 'avgpool2d');
}

/**
 * The preset's spec for data of `inputShape` ([F], or [C,H,W] when the data has an image shape) with
 * `classCount` classes: the input shape is replaced and the last dense layer gets `classCount` units.
 * Throws SpecError when the result is invalid, e.g. an image preset on flat data or images too small.
 */
export function presetForData(preset: Preset, inputShape: readonly number[], classCount: number): ModelSpec {
  const data = formatShape(inputShape);
  if (isImagePreset(preset) && inputShape.length !== 3) {
    throw new SpecError(
      `preset ${preset.name} needs image data [C,H,W], but the data is flat (${data} features); ` +
        'give the data an image shape (e.g. 1x28x28) or choose an MLP',
    );
  }
  if (!Number.isInteger(classCount) || classCount < 2) {
    throw new SpecError(`preset ${preset.name}: ${tooFewClasses(classCount)}`);
  }
  const spec = structuredClone(preset.spec);
  spec.input = inputShape.length === 3 ? [inputShape[0], inputShape[1], inputShape[2]] : [inputShape[0]];
  const lastDense = spec.layers.map((layer) => layer.kind).lastIndexOf('dense');
  if (lastDense < 0) throw new SpecError(`preset ${preset.name} has no dense layer to size for ${classCount} classes`);
  const head = spec.layers[lastDense];
  if (head.kind === 'dense') head.units = classCount;
  try {
    inferShapes(spec);
  } catch (error) {
    if (!(error instanceof SpecError)) throw error;
    throw new SpecError(`preset ${preset.name} on data ${data}: ${error.message}`, error.layerIndex);
  }
  return spec;
}
