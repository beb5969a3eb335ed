// The typed engine API: the only way the rest of the TypeScript reaches the native engine.
// Invalid arguments throw synchronously (TypeError / RangeError / Error with the engine's message);
// failures during a run reject the run's promise. Engine errors carry `code`: ERR_NNSTUDIO_SPEC for an
// invalid model spec, ERR_NNSTUDIO_ENGINE for other engine errors, ERR_NNSTUDIO_INTERNAL otherwise.
import type { ModelSpec } from '../core/model/spec';
import {
  native,
  type NativeCheckpointEvent,
  type NativeTrainState,
  type NativeDataset,
  type NativeDevice,
  type NativeEpochEvent,
  type NativeEpochStats,
  type NativeEvalResult,
  type NativeLayerInfo,
  type NativeParamTensor,
  type NativeStepEvent,
  type NativeTrainResult,
} from './native';

// ---- types ----

import type { DeviceKind } from '../core/model/trainingTypes';
export type { DeviceKind };
/** What the user asks for: 'auto' picks CUDA when available, else the CPU. */
export type DeviceChoice = 'auto' | DeviceKind;
export type { Precision } from '../core/model/precision';
import type { Precision } from '../core/model/precision';

export type DeviceInfo = NativeDevice;
export type LayerShape = NativeLayerInfo;
export type ParameterTensor = NativeParamTensor;

/**
 * Samples as the engine takes them: features (count, featureSize) row-major, labels (count) class indices;
 * a regression's targets (count, width) instead of labels.
 */
export type Dataset = NativeDataset;

export interface TrainOptions {
  epochs: number;
  batchSize: number;
  /** Shuffle the training order every epoch (default true). */
  shuffle?: boolean;
  /** Data order and dropout; the weights' init uses spec.seed (default 0). */
  seed?: number;
  /** CPU threads, 0 = one per hardware thread (default 0). */
  threads?: number;
  device?: DeviceChoice;
  /** Minimum seconds between step events (default 0.05, i.e. at most 20/s). */
  progressIntervalSeconds?: number;
  /** Start from these weights (e.g. fine-tuning) instead of the spec's seeded init. */
  initialParameters?: Float32Array;
  /** Default constant. */
  lrSchedule?: LrSchedule;
  earlyStopping?: EarlyStopping;
  /** Augmentation of image training batches on the device, seeded by (seed, global step). */
  augment?: Augmentation;
  /** CUDA: the GPUs to train on (indices); several train data-parallel through NCCL, else the first alone. */
  gpus?: number[];
  /** CUDA: the tensor-core products' arithmetic (default fp32; the CPU always computes in FP32). */
  precision?: Precision;
  /** Decay of the weight average (EMA) used for validation and returned as the weights. */
  ema?: number;
  /** Continue this state exactly (same spec, data, batch size, shuffle and seed); `epochs` counts all epochs. */
  resume?: TrainState;
  /** Emit a 'checkpoint' event with the TrainState at every epoch end. */
  checkpoints?: boolean;
  /** Classification: one weight per class (> 0), PyTorch's CrossEntropyLoss(weight) semantics. */
  classWeights?: number[];
  /**
   * Regression: the targets given are (y - targetMean) / targetStd per column; the engine reports the
   * validation MAE, RMSE and MAPE in the original units with them (empty or absent: identity).
   */
  targetMean?: number[];
  targetStd?: number[];
}

export type { Augmentation, EarlyStopping, EarlyStoppingMonitor, LrSchedule } from '../core/model/trainingControl';
import type { Augmentation, EarlyStopping, LrSchedule } from '../core/model/trainingControl';
export type TrainState = NativeTrainState;
export type CheckpointEvent = NativeCheckpointEvent;

export type StepEvent = NativeStepEvent;
export type EpochEvent = NativeEpochEvent;
export type TrainProgress = StepEvent | EpochEvent | CheckpointEvent;
export type EpochStats = NativeEpochStats;
export type TrainStatus = NativeTrainResult['status'];
export type TrainResult = NativeTrainResult;

export interface TrainingRun {
  /** Settles when the run ends: completed, cancelled or diverged; rejects on an engine error. */
  readonly promise: Promise<TrainResult>;
  /** The device the run uses, after resolving 'auto'. */
  readonly device: DeviceKind;
  /** Stops within one step; the promise resolves with status 'cancelled' and the last weights. */
  cancel(): void;
  /** Holds the training thread between steps until resume() or cancel(). */
  pause(): void;
  resume(): void;
  /** A new base learning rate (the schedule scales with it) from the next step; RangeError unless in (0, 1e6]. */
  setLearningRate(lr: number): void;
}

export interface EvaluateOptions {
  batchSize?: number;
  device?: DeviceChoice;
  threads?: number;
  /** Test-time augmentation: probabilities averaged over the input and its shifted views (images). */
  tta?: boolean;
  /** With tta, the mirror image too (for data trained with flips). */
  ttaFlip?: boolean;
}

export type EvaluateResult = NativeEvalResult;

// ---- devices ----

export function listDevices(): DeviceInfo[] {
  return native().listDevices();
}

export function cudaAvailable(): boolean {
  return native().cudaAvailable();
}

/** 'auto' = cuda when available else cpu; 'cuda' without a CUDA device throws. */
export function resolveDevice(choice: DeviceChoice = 'auto'): DeviceKind {
  switch (choice) {
    case 'cpu':
      return 'cpu';
    case 'cuda':
      if (!native().cudaAvailable()) throw new Error('no CUDA device is available; use --device cpu');
      return 'cuda';
    case 'auto':
      return native().cudaAvailable() ? 'cuda' : 'cpu';
    default:
      throw new TypeError(`unknown device ${JSON.stringify(choice)}: expected 'auto', 'cpu' or 'cuda'`);
  }
}

// ---- model spec ----

function specJson(spec: ModelSpec): string {
  return JSON.stringify(spec);
}

/** Per-layer output shape, parameters and multiply-adds, as the engine computes them. */
export function inferShapes(spec: ModelSpec): LayerShape[] {
  return native().inferShapes(specJson(spec));
}

/** Every trainable tensor (layers.<i>.weight / .bias) with its offset in the flat parameter vector. */
export function parameterTable(spec: ModelSpec): ParameterTensor[] {
  return native().parameterTable(specJson(spec));
}

/** The seeded initial weights (seed defaults to spec.seed). */
export function initialParameters(spec: ModelSpec, seed: number = spec.seed): Float32Array {
  return native().initialParameters(specJson(spec), seed);
}

// ---- training and evaluation ----

/**
 * Trains on a thread the engine owns (not libuv's pool); the event loop keeps running. `onProgress`
 * receives every epoch event and step events at most every progressIntervalSeconds; if it throws, the run
 * is cancelled and the promise rejects with that error. The run copies the typed arrays when it starts:
 * what the caller does with them afterwards does not reach it.
 */
export function train(
  spec: ModelSpec,
  trainingSet: Dataset,
  validationSet: Dataset | null | undefined,
  options: TrainOptions,
  onProgress?: (event: TrainProgress) => void,
): TrainingRun {
  const device = resolveDevice(options.device ?? 'auto');
  const handle = native().startTraining(
    specJson(spec),
    trainingSet,
    validationSet ?? null,
    {
      epochs: options.epochs,
      batchSize: options.batchSize,
      shuffle: options.shuffle,
      seed: options.seed,
      threads: options.threads,
      device,
      progressIntervalSeconds: options.progressIntervalSeconds,
      lrSchedule: options.lrSchedule,
      earlyStopping: options.earlyStopping,
      ...(options.augment ? { augment: options.augment } : {}),
      ...(options.ema ? { ema: options.ema } : {}),
      ...(options.gpus && options.gpus.length > 0 ? { gpus: options.gpus } : {}),
      ...(options.precision ? { precision: options.precision } : {}),
      resume: options.resume,
      checkpoints: options.checkpoints,
      classWeights: options.classWeights,
      targetMean: options.targetMean,
      targetStd: options.targetStd,
    },
    options.initialParameters ?? null,
    onProgress ?? null,
  );
  return {
    promise: handle.promise,
    device,
    cancel: () => handle.cancel(),
    pause: () => handle.pause(),
    resume: () => handle.resume(),
    setLearningRate: (lr: number) => handle.setLearningRate(lr),
  };
}

/**
 * Loss, accuracy, predictions (count) and probabilities (count, classes) of `parameters` on `data`; for a
 * regression spec the head's outputs (count, width) and the loss when `data` has targets.
 */
export function evaluate(
  spec: ModelSpec,
  parameters: Float32Array,
  data: Dataset,
  options: EvaluateOptions = {},
): Promise<EvaluateResult> {
  const device = resolveDevice(options.device ?? 'auto');
  return native().evaluate(specJson(spec), parameters, data, {
    batchSize: options.batchSize,
    device,
    threads: options.threads,
    ...(options.tta ? { tta: true, ...(options.ttaFlip ? { ttaFlip: true } : {}) } : {}),
  });
}

/** The same functions as one object, for injection into services. */
export const Engine = {
  listDevices,
  cudaAvailable,
  resolveDevice,
  inferShapes,
  parameterTable,
  initialParameters,
  train,
  evaluate,
} as const;
export type EngineApi = typeof Engine;
