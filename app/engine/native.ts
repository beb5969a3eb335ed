// Locates and loads the native engine (build/native/Release/nnstudio.node) and types its raw API.
// Only app/engine/index.ts uses this; everything else goes through the typed Engine functions.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DeviceInfo, EpochProgress, EpochStats, StepProgress, TrainState } from '../core/model/trainingTypes';

// ---- the addon's raw API (native/src/addon) ----

/** The devices, step and epoch events are typed once, for every layer (core/model/trainingTypes.ts). */
export type NativeDevice = DeviceInfo;

export interface NativeLayerInfo {
  label: string;
  outputShape: number[];
  parameters: number;
  multiplyAdds: number;
}

export interface NativeParamTensor {
  name: string;
  shape: number[];
  offset: number;
  size: number;
}

export interface NativeDataset {
  features: Float32Array;
  /** Class indices (classification); a regression's are ignored (the app's hold -1). */
  labels: Int32Array;
  /** Regression: count x (the head's width) targets, row-major, normalised units; absent for prediction input. */
  targets?: Float32Array;
}

import type { Augmentation, EarlyStopping, LrSchedule } from '../core/model/trainingControl';
export type { EarlyStopping, EarlyStoppingMonitor, LrSchedule } from '../core/model/trainingControl';

/** Everything to continue a run exactly, at an epoch boundary (engine.h TrainState). */
export type NativeTrainState = TrainState;

export interface NativeTrainOptions {
  epochs?: number;
  batchSize?: number;
  shuffle?: boolean;
  seed?: number | bigint;
  threads?: number;
  device?: 'cpu' | 'cuda';
  progressIntervalSeconds?: number;
  lrSchedule?: LrSchedule;
  earlyStopping?: EarlyStopping;
  /** Augmentation of image training batches on the device (engine.h Augmentation). */
  augment?: Augmentation;
  /** Decay of the weight average used for validation and returned as the weights; 0 or absent: none. */
  ema?: number;
  /** CUDA: the GPUs to train on; more than one: data-parallel through NCCL (engine.h TrainOptions::gpus). */
  gpus?: number[];
  /** CUDA: the convolutions' arithmetic (engine.h Precision); default fp32. */
  precision?: 'fp32' | 'tf32' | 'mixed';
  /** Continue this state; `epochs` is the run's total. */
  resume?: NativeTrainState;
  /** Send a 'checkpoint' event with the TrainState after every epoch. */
  checkpoints?: boolean;
  /** Classification: one weight per class (> 0); losses become sum(w_y l) / sum(w_y). */
  classWeights?: number[];
  /** Regression: per target column, the normalisation the targets went through (for the metrics' units). */
  targetMean?: number[];
  targetStd?: number[];
}

export type NativeStepEvent = StepProgress;
export type NativeEpochStats = EpochStats;
export type NativeEpochEvent = EpochProgress;

export interface NativeCheckpointEvent extends NativeTrainState {
  type: 'checkpoint';
}

export type NativeTrainEvent = NativeStepEvent | NativeEpochEvent | NativeCheckpointEvent;

export interface NativeTrainResult {
  status: 'completed' | 'cancelled' | 'diverged';
  message: string;
  parameters: Float32Array;
  history: NativeEpochStats[];
  seconds: number;
  steps: number;
  device: string;
  /** Early stopping ended the run (status 'completed', message says why). */
  stoppedEarly: boolean;
  /** With early stopping: the best epoch (1-based), else 0. */
  bestEpoch: number;
  /** `parameters` are the best epoch's. */
  restoredBest: boolean;
  /** What the run chose for the user (one GPU instead of several, and why). */
  notes: string[];
}

export interface NativeTrainingHandle {
  promise: Promise<NativeTrainResult>;
  cancel(): void;
  pause(): void;
  resume(): void;
  /** A new base learning rate from the next step; throws RangeError unless in (0, 1e6]. */
  setLearningRate(lr: number): void;
}

export interface NativeEvaluateOptions {
  batchSize?: number;
  device?: 'cpu' | 'cuda';
  threads?: number;
  /** Test-time augmentation: probabilities averaged over the input and its four one-pixel shifts (images only). */
  tta?: boolean;
  /** With tta, the mirror image too (only for data trained with flips). */
  ttaFlip?: boolean;
}

export interface NativeEvalResult {
  /** Mean loss (unweighted); 0 without labels or targets. */
  loss: number;
  accuracy: number;
  /** 0 for a regression. */
  classes: number;
  /** Empty for a regression. */
  predictions: Int32Array;
  /** Empty for a regression. */
  probabilities: Float32Array;
  /** Regression: the head's outputs, count x width, normalised units. */
  outputs?: Float32Array;
}

export interface NativeAddon {
  listDevices(): NativeDevice[];
  cudaAvailable(): boolean;
  inferShapes(specJson: string): NativeLayerInfo[];
  parameterTable(specJson: string): NativeParamTensor[];
  initialParameters(specJson: string, seed?: number | bigint): Float32Array;
  startTraining(
    specJson: string,
    train: NativeDataset,
    validation: NativeDataset | null,
    options: NativeTrainOptions,
    initialParameters: Float32Array | null,
    onEvent: ((event: NativeTrainEvent) => void) | null,
  ): NativeTrainingHandle;
  evaluate(
    specJson: string,
    parameters: Float32Array,
    data: NativeDataset,
    options: NativeEvaluateOptions,
  ): Promise<NativeEvalResult>;
}

// ---- locating the module ----

export const nativeModuleEnv = 'NNSTUDIO_NATIVE';
export const nativeModuleRelativePath = path.join('build', 'native', 'Release', 'nnstudio.node');

/** The repository (or packaged app) root: the nearest folder upwards holding nnstudio's package.json. */
export function findPackageRoot(startDir: string): string | undefined {
  let dir = path.resolve(startDir);
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    try {
      const parsed: unknown = JSON.parse(fs.readFileSync(manifest, 'utf8'));
      if (typeof parsed === 'object' && parsed !== null && (parsed as { name?: unknown }).name === 'nnstudio') return dir;
    } catch {
      // no or unreadable package.json here: keep walking up
    }
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** Where the addon should be: $NNSTUDIO_NATIVE, else build/native/Release/nnstudio.node under the root. */
export function nativeModulePath(env: NodeJS.ProcessEnv = process.env, startDir: string = __dirname): string {
  const override = env[nativeModuleEnv];
  if (override) return path.resolve(override);
  const root = findPackageRoot(startDir);
  if (!root) {
    throw new Error(`the native engine is not built: run npm install (no nnstudio package.json above ${startDir})`);
  }
  // Packaged Electron apps unpack the .node next to the archive (electron-builder asarUnpack).
  return path.join(root.replace(/\.asar$/, '.asar.unpacked'), nativeModuleRelativePath);
}

/** Loads the addon at `file`, with a clear message when it is missing or unloadable. */
export function loadNativeModule(file: string): NativeAddon {
  if (!fs.existsSync(file)) {
    throw new Error(`the native engine is not built: run npm install (missing ${file})`);
  }
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(file) as NativeAddon;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`the native engine at ${file} failed to load: ${reason} (rebuild it with npm install)`);
  }
}

let cached: NativeAddon | undefined;

/** The loaded addon (loaded once, on first use). */
export function native(): NativeAddon {
  cached ??= loadNativeModule(nativeModulePath());
  return cached;
}
