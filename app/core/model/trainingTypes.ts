// Devices and what a training run reports, typed once: the engine's events, the services' plan and the
// history a model file keeps, as the UI API (app/api/types.ts) hands them to the renderer. Types only, and
// nothing of Node, so the renderer may import them (like modelCheck.ts).
import type { ModelSpec } from './spec';
import type { EarlyStopping, LrSchedule } from './trainingControl';

export type DeviceKind = 'cpu' | 'cuda';

export interface DeviceInfo {
  kind: DeviceKind;
  index: number;
  name: string;
  memoryBytes: number;
  /** CUDA only, e.g. "9.0". */
  computeCapability?: string;
  /** CPU only: hardware threads. */
  threads?: number;
}

/** One epoch as the engine measured it (NaN and Infinity possible: JSON makes them null). */
export interface EpochStats {
  epoch: number;
  trainLoss: number;
  trainAccuracy: number;
  validationLoss?: number;
  validationAccuracy?: number;
  seconds: number;
  /** Of the epoch's last step. */
  learningRate: number;
  // ---- regression runs only (absent in classification; a value that is not finite is left out) ----
  /** R² of the epoch's training predictions (as the steps made them), pooled over target columns. */
  trainR2?: number;
  /** Validation metrics in the targets' original units, scikit-learn's, averaged over target columns. */
  validationMae?: number;
  validationRmse?: number;
  validationR2?: number;
  /** A fraction (0.05 = 5 %); absent when a validation target is 0. */
  validationMape?: number;
}

/** Everything to continue a run exactly, at an epoch boundary (engine.h TrainState; a checkpoint keeps it). */
export interface TrainState {
  /** Completed epochs. */
  epoch: number;
  /** Optimizer steps done over the whole run. */
  step: number;
  /** The run's data-order/dropout seed as a decimal string (64 bits). */
  seed: string;
  /** The base learning rate in force. */
  learningRate: number;
  parameters: Float32Array;
  /** SGD: velocity (P); Adam: m (P) then v (P). */
  optimizerState: Float32Array;
  history: EpochStats[];
  /** Early stopping with restoreBest: the best epoch's weights. */
  bestParameters?: Float32Array;
  /** The weight average of a run with ema (the engine's TrainState::emaParameters). */
  emaParameters?: Float32Array;
}

/** The engine's step event (at most every progressIntervalSeconds, 20/s by default). */
export interface StepProgress {
  type: 'step';
  epoch: number;
  step: number;
  stepsPerEpoch: number;
  globalStep: number;
  totalSteps: number;
  loss: number;
  samplesPerSecond: number;
  etaSeconds: number;
  /** Of the latest step. */
  learningRate: number;
}

/** The engine's event at every epoch's end. */
export interface EpochProgress extends EpochStats {
  type: 'epoch';
}

/** One epoch of a training history as model files and run files keep it (epochRecordSchema checks it). */
export interface EpochRecord {
  epoch: number;
  /** null where the loss was not finite (JSON has no NaN). */
  trainLoss: number | null;
  trainAccuracy: number | null;
  validationLoss?: number | null;
  validationAccuracy?: number | null;
  /** Regression runs: R² of the epoch's training steps and the validation metrics, in the targets' units. */
  trainR2?: number | null;
  validationR2?: number | null;
  validationMae?: number | null;
  validationRmse?: number | null;
  /** Absent when a validation target is 0. */
  validationMape?: number | null;
  seconds: number;
  /** Of the epoch's last step (files from before learning-rate schedules have none). */
  learningRate?: number;
  [extra: string]: unknown;
}

/** How a model was trained, as its file keeps it. */
export interface TrainingRecord {
  /** The options the run used (epochs, batchSize, ...), as the caller passed them. */
  options: Record<string, unknown>;
  history: EpochRecord[];
  /** "cpu (2 threads)", "NVIDIA H100 80GB HBM3". */
  device: string;
  seconds: number;
}

/** Everything a face shows before the first step. */
export interface TrainPlan {
  spec: ModelSpec;
  device: DeviceKind;
  /** The convolutions' arithmetic (core/model/precision.ts): always fp32 on the CPU. */
  precision?: 'fp32' | 'tf32' | 'mixed';
  epochs: number;
  batchSize: number;
  trainCount: number;
  validationCount: number;
  testCount: number;
  /** Empty for regression. */
  classLabels: string[];
  /** Absent: classification. */
  task?: 'classification' | 'regression';
  /** Regression: the target columns the model predicts. */
  targetNames?: string[];
  dataDescription: string;
  /** A resumed or continued run: the epochs its checkpoint had completed (the file's path is the caller's). */
  resumedFrom?: { epoch: number };
  /** Defaults the data chose, in words (a small regression table's weight decay and validation share). */
  notes?: string[];
  lrSchedule?: LrSchedule;
  earlyStopping?: EarlyStopping;
}

/** What a run would train, validate and test on, before it starts (the Data screen's live counts). */
export interface SplitPlan {
  trainCount: number;
  validationCount: number;
  testCount: number;
  /** The separate test set used instead of a test share (MNIST's test half), as the CLI describes it. */
  separateTest?: string;
}
