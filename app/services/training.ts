// The training service: the one path every face trains through (the CLI's `train` and `--resume`, the UI's
// `training:start` and `training:continue`). trainModel prepares the run (trainingSetup.ts: data → split →
// spec → normalisation, or all of it from a checkpoint), drives the engine with the face's events, control
// and checkpoints (written atomically after every epoch, app/core/model/checkpointFile.ts), evaluates the
// test set and returns the outcome, recorded in the run history when the face asks.
import type { Dataset } from '../core/data/dataset';
import type { Preprocessing } from '../core/data/preprocess';
import { classificationReport, emptyClassificationReport, type ClassificationReport } from '../core/metrics/classification';
import type { Checkpoint } from '../core/model/checkpointFile';
import type { Model } from '../core/model/modelFile';
import type { EpochProgress, StepProgress, TrainPlan } from '../core/model/trainingTypes';
import * as engine from '../engine';
import type { RegressionReport } from '../core/metrics/regression';
import { regressionEvaluation, type RegressionEvaluation } from './evaluation';
import { CheckpointWriter } from './checkpointWriter';
import type { TrainingControl } from './runControl';
import { recordRun, type RunNaming, type RunStore } from './runs';
import { modelOf, prepareRun, type DataReader, type PreparedRun, type ResumeRequest, type TrainRequest } from './trainingSetup';

export { TrainingControl } from './runControl';
export { defaultTestSplit, defaultValSplit, planSplit, separateTestSource, type ResumeRequest, type TrainRequest } from './trainingSetup';
export type { SplitPlan, TrainPlan } from '../core/model/trainingTypes';

/** A checkpoint written (the engine's full state stays in the file, not in the event). */
export interface CheckpointWritten {
  type: 'checkpoint';
  epoch: number;
  path: string;
}

export type TrainEvent = { type: 'plan'; plan: TrainPlan } | StepProgress | EpochProgress | CheckpointWritten;

/** Where the run history keeps the run, or why it could not (the run itself stands). */
export type SavedRunResult = { runId: string; error?: undefined } | { error: string; runId?: undefined };

export interface TrainOutcome {
  status: engine.TrainStatus;
  /** Why the run stopped early (cancelled, diverged, early stopping); empty when it completed normally. */
  message: string;
  /** What the engine chose for the user (one GPU instead of several, and why). */
  notes: string[];
  /** Early stopping ended the run (status 'completed'). */
  stoppedEarly: boolean;
  /** With early stopping: the best epoch; with restoreBest the model holds its weights. */
  bestEpoch?: number;
  /** The last checkpoint written, if any. */
  checkpointPath?: string;
  model: Model<Preprocessing>;
  /** For a regression run `report` is empty and `regression` holds the test metrics (original units). */
  test?: { loss: number; report: ClassificationReport; regression?: RegressionReport };
  /** The test examples as read (before normalisation) with the model's outputs, for browsing them. */
  testPredictions?: { data: Dataset; predictions: Int32Array; probabilities: Float32Array; regression?: RegressionEvaluation };
  plan: TrainPlan;
  /** The request that ran: for a continued run, the one rebuilt from its checkpoint (the run history records it). */
  request: TrainRequest;
  /** With `history` in the hooks. */
  savedRun?: SavedRunResult;
  /** With `deferTest` in the hooks: evaluates the test set once, filling `test`, `testPredictions` and the model's metrics. */
  runTest?: () => Promise<void>;
}

/**
 * A run that trained but was stopped by a failure around it (a checkpoint that could not be written):
 * the message says why, and `outcome` holds the weights of the last completed step, so a face can keep
 * the model; callers that only catch errors still see a failure.
 */
export class RunStoppedError extends Error {
  constructor(message: string, readonly outcome: TrainOutcome) {
    super(message);
    this.name = 'RunStoppedError';
  }
}

/** What a face adds to a run: it hears its events, steers it, and may have it recorded. */
export interface TrainingHooks {
  onEvent?: (event: TrainEvent) => void;
  /** Cancels: the outcome then has status 'cancelled' and the weights so far. */
  signal?: AbortSignal;
  /** Pause, resume, cancel and a new learning rate, for interactive faces. */
  control?: TrainingControl;
  /** Record the finished run (whatever its status) in this run history, its data named so when given. */
  history?: { store: RunStore; naming?: RunNaming };
  /** Leave the test set alone until the outcome's runTest() (a search selects on validation data only). */
  deferTest?: boolean;
  /** Where the data comes from: its files by default; a search's trials share one reading. */
  reader?: DataReader;
}

/**
 * Trains as requested: a new run (TrainRequest) or the run of a checkpoint continued (ResumeRequest: the
 * CLI's --resume, and the UI's training:continue with a checkpoint file of its own). Divergence ends with
 * status 'diverged' and the last weights whose loss was finite; a checkpoint that cannot be written throws
 * a RunStoppedError carrying the outcome.
 */
export async function trainModel(request: TrainRequest | ResumeRequest, hooks: TrainingHooks = {}): Promise<TrainOutcome> {
  const startedAt = new Date();
  const run = await prepareRun(request, hooks.reader);
  hooks.onEvent?.({ type: 'plan', plan: run.plan });
  const { result, checkpoints } = await driveEngine(run, hooks);
  const outcome = await outcomeOf(run, result, checkpoints?.lastWritten, hooks.deferTest ?? false);
  if (hooks.history) outcome.savedRun = await recordInHistory(outcome, startedAt, hooks.history);
  const failure = checkpoints?.error;
  if (failure) {
    const epochs = result.history.length;
    throw new RunStoppedError(
      `${failure.message}; training stopped after ${epochs} epoch${epochs === 1 ? '' : 's'} (step ${result.steps}), ` +
        'and the model keeps the weights of the last completed step',
      outcome,
    );
  }
  return outcome;
}

/** How a run ended, for a face that keeps what trained even when a failure stopped it. */
export type TrainingEnding =
  | { outcome: TrainOutcome; failure?: Error }
  | { outcome?: undefined; failure: Error };

/** trainModel's promise as a value that never rejects: a RunStoppedError keeps its outcome beside the failure. */
export function settle(training: Promise<TrainOutcome>): Promise<TrainingEnding> {
  return training.then(
    (outcome) => ({ outcome }),
    (error: unknown) => {
      if (error instanceof RunStoppedError) return { outcome: error.outcome, failure: error };
      return { failure: error instanceof Error ? error : new Error(String(error)) };
    },
  );
}

// ---- the engine run ----

/** Runs the engine with the face's events and control; checkpoints go to the run's file as they come. */
async function driveEngine(run: PreparedRun, hooks: TrainingHooks): Promise<{ result: engine.TrainResult; checkpoints?: CheckpointWriter }> {
  const onEvent = hooks.onEvent ?? (() => {});
  let engineRun: engine.TrainingRun | undefined;
  const file = run.request.checkpointPath;
  const checkpoints = file === undefined
    ? undefined
    : new CheckpointWriter(file, (epoch, written) => onEvent({ type: 'checkpoint', epoch, path: written }), () => engineRun?.cancel());
  const onProgress = (event: engine.TrainProgress): void => {
    if (event.type !== 'checkpoint') return onEvent(event);
    if (checkpoints?.accepts) checkpoints.offer(checkpointOf(run, event), event.epoch);
  };
  const resume = run.resumption?.checkpoint.state;
  engineRun = engine.train(run.spec, run.sets.train, run.sets.validation, {
    ...run.engineOptions,
    checkpoints: checkpoints !== undefined,
    ...(resume ? { resume } : {}),
  }, onProgress);
  const cancel = () => engineRun?.cancel();
  hooks.signal?.addEventListener('abort', cancel, { once: true });
  if (hooks.signal?.aborted) engineRun.cancel();
  hooks.control?.attach(engineRun);
  try {
    return { result: await engineRun.promise, checkpoints };
  } finally {
    hooks.signal?.removeEventListener('abort', cancel);
    hooks.control?.attach(undefined);
    await checkpoints?.settled();
  }
}

/** An epoch's engine state as a checkpoint of this run. */
function checkpointOf(run: PreparedRun, state: engine.CheckpointEvent): Checkpoint {
  const seconds = state.history.reduce((sum, epoch) => sum + epoch.seconds, 0);
  const weights = { parameters: state.parameters, history: state.history, status: 'checkpoint', seconds, device: run.plan.device };
  return {
    model: modelOf(run, weights),
    state: {
      epoch: state.epoch, step: state.step, seed: state.seed, learningRate: state.learningRate,
      parameters: state.parameters, optimizerState: state.optimizerState, history: state.history,
      ...(state.bestParameters ? { bestParameters: state.bestParameters } : {}),
      ...(state.emaParameters ? { emaParameters: state.emaParameters } : {}),
    },
    run: { ...run.record },
  };
}

// ---- after the engine ----

/** The test set's loss, report and per-example outputs under these weights (none without a test set). */
async function testMetrics(run: PreparedRun, parameters: Float32Array) {
  const { data, sets, spec, engineOptions } = run;
  if (!data.test || !sets.test || sets.test.count === 0) return undefined;
  const evaluation = await engine.evaluate(spec, parameters, sets.test, { device: engineOptions.device, threads: engineOptions.threads });
  const scaling = run.preprocessing.target;
  if (scaling !== undefined && data.test.targets !== undefined) {
    const details = regressionEvaluation(scaling, data.test.targets, evaluation.outputs);
    return {
      test: { loss: evaluation.loss, report: emptyClassificationReport(), regression: details.report },
      predictions: { data: data.test, predictions: evaluation.predictions, probabilities: evaluation.probabilities, regression: details },
    };
  }
  const labels = data.all.classLabels;
  return {
    test: { loss: evaluation.loss, report: classificationReport(sets.test.labels, evaluation.predictions, labels.length, labels) },
    predictions: { data: data.test, predictions: evaluation.predictions, probabilities: evaluation.probabilities },
  };
}

async function outcomeOf(run: PreparedRun, result: engine.TrainResult, lastCheckpoint: string | undefined, deferTest: boolean): Promise<TrainOutcome> {
  const best = result.stoppedEarly || result.restoredBest ? { bestEpoch: result.bestEpoch } : {};
  const model = modelOf(run, result, best);
  const outcome: TrainOutcome = {
    status: result.status,
    message: result.message,
    notes: [...(result.notes ?? [])],
    stoppedEarly: result.stoppedEarly,
    ...(result.bestEpoch > 0 ? { bestEpoch: result.bestEpoch } : {}),
    ...(lastCheckpoint ? { checkpointPath: lastCheckpoint } : {}),
    model,
    plan: run.plan,
    request: run.request,
  };
  const runTest = async () => {
    const tested = await testMetrics(run, result.parameters);
    if (!tested) return;
    model.metrics = { test: tested.test.regression ?? tested.test.report, testLoss: tested.test.loss };
    outcome.test = tested.test;
    outcome.testPredictions = tested.predictions;
  };
  if (deferTest) outcome.runTest = runTest;
  else await runTest();
  return outcome;
}

/** The run history is a convenience: a failure to record is reported beside the outcome, never thrown. */
async function recordInHistory(outcome: TrainOutcome, startedAt: Date, { store, naming }: NonNullable<TrainingHooks['history']>): Promise<SavedRunResult> {
  try {
    return { runId: (await recordRun(outcome, { ...naming, startedAt, request: outcome.request }, store)).id };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}
