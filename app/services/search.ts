// Hyperparameter search (issue 16): trials drawn from a space with a seed, successive halving on the
// validation data (core/search/halving.ts), every trial a run of the training service (in the run history
// when the face asks), and the test set evaluated once, for the winner. The CLI's `nnstudio search` runs it.
import { setMaxListeners } from 'node:events';
import { headOfDataset } from '../core/model/head';
import { compareStandings, firstRungEpochs, halvingPlan, promote, type Rung, type Standing } from '../core/search/halving';
import {
  augmentationOf, defaultSearchSpace, drawTrials, hiddenLayers, maxImageDepth, searchSpaceSchema,
  type DataKind, type SearchSpace, type TrialConfig,
} from '../core/search/space';
import type { EpochRecord } from '../core/model/modelFile';
import type { LrSchedule } from '../core/model/trainingControl';
import * as engine from '../engine';
import type { Dataset } from '../core/data/dataset';
import { describeDataSource, type DataSource } from './dataSources';
import type { RunNaming, RunStore } from './runs';
import { trainModel, type TrainOutcome, type TrainRequest } from './training';
import { defaultValSplit, fileReader, planSplit, type DataReader } from './trainingSetup';

export interface SearchRequest {
  data: DataSource;
  testData?: DataSource;
  /** Trials drawn (default 27). */
  trials?: number;
  /**
   * Epochs of the first rung (below 1: one pass over that share of the training split) and of the last. Default
   * last: 9 for 60 000 examples, more for fewer (defaultMaxEpochs); first: as many rungs below as the trials allow
   * (firstRungEpochs).
   */
  minEpochs?: number;
  maxEpochs?: number;
  /** Each rung keeps the best 1/eta (default 3). */
  eta?: number;
  /** Seconds the search may take: no trial starts after them (the one training finishes), the best so far wins. */
  budgetSeconds?: number;
  /** Replaces parts of the data kind's default space. */
  space?: Partial<SearchSpace>;
  /** Draws, splits and every trial's weights (default 0). */
  seed?: number;
  valSplit?: number;
  testSplit?: number;
  device?: engine.DeviceChoice;
  threads?: number;
  /** CUDA: every trial's tensor-core arithmetic (default mixed). */
  precision?: engine.Precision;
  /** Trials training at once (default: defaultParallelTrials). The runs and the winner do not depend on it. */
  parallel?: number;
}

/**
 * Trials at once when the request names none: on a GPU several small trials share it (each has its own
 * stream and graph; measured on an H100: docs/SEARCH.md), on the CPU one (each trial already takes every thread).
 */
export function defaultParallelTrials(device: 'cpu' | 'cuda'): number {
  return device === 'cuda' ? 4 : 1;
}

/** A search stopped before its first trial ended: there is no best to keep. */
export class SearchCancelledError extends Error {
  constructor() {
    super('the search was stopped before its first trial ended');
    this.name = 'SearchCancelledError';
  }
}

/** One trial trained at one rung. */
export interface TrialRun {
  config: TrialConfig;
  /** 0-based. */
  rung: number;
  epochs: number;
  /** Validation accuracy (classification) or R² (regression) after the last epoch; -Infinity when not finite. */
  score: number;
  validationLoss: number;
  status: engine.TrainStatus;
  seconds: number;
  /** The training examples of each of its epochs (fewer on a share of the split). */
  trainExamples: number;
  runId?: string;
}

export type SearchEvent =
  | { type: 'plan'; kind: DataKind; task: 'classification' | 'regression'; space: SearchSpace; rungs: Rung[]; data: string; examples: number; parallel: number }
  | { type: 'trial'; run: TrialRun; done: number; total: number };

export interface SearchHooks {
  onEvent?: (event: SearchEvent) => void;
  /** Ends the search after the trials that are training (Ctrl-C, Stop). */
  signal?: AbortSignal;
  /** Ends it now: the trials training are cancelled and left out (a session closing). */
  stopNow?: AbortSignal;
  history?: { store: RunStore; naming?: RunNaming };
  /** Trains one trial: the training service unless a test stands in for the engine (a failing trial, say). */
  trainTrial?: typeof trainModel;
}

export interface SearchOutcome {
  kind: DataKind;
  space: SearchSpace;
  rungs: Rung[];
  /** Every trial at every rung it reached, in the order they ran. */
  runs: TrialRun[];
  /** Each trial's best run, best first (compareRuns: the validation score, then the longer run). */
  leaderboard: TrialRun[];
  /** The leaderboard's first. */
  best: TrialRun;
  /** The best run's outcome, its test set evaluated (the only test evaluation of the search). */
  outcome: TrainOutcome;
  /** Cancelled before every planned trial ran: the best so far. */
  cancelled: boolean;
  /** The time budget ended the search before every planned trial ran. */
  outOfTime: boolean;
  seconds: number;
}

/**
 * The last rung's epochs when the request names none: about as many examples seen as 9 epochs of MNIST's 60 000
 * (small data trains for more epochs, up to 180, as `train`'s 200 for tables).
 */
export function defaultMaxEpochs(examples: number): number {
  return Math.min(180, Math.max(9, Math.ceil(540_000 / Math.max(examples, 1))));
}

/** The rungs a request asks for, on data of `examples` rows of which `trainExamples` train. */
export function searchPlan(request: Pick<SearchRequest, 'trials' | 'minEpochs' | 'maxEpochs' | 'eta'>, examples: number, trainExamples: number): Rung[] {
  const trials = request.trials ?? 27;
  const eta = request.eta ?? 3;
  const maxEpochs = request.maxEpochs ?? Math.max(defaultMaxEpochs(examples), Math.ceil(request.minEpochs ?? 1));
  const minEpochs = request.minEpochs ?? firstRungEpochs(trials, maxEpochs, eta, trainExamples);
  return halvingPlan(trials, minEpochs, maxEpochs, eta);
}

export async function runSearch(request: SearchRequest, hooks: SearchHooks = {}): Promise<SearchOutcome> {
  const started = performance.now();
  const seed = request.seed ?? 0;
  // every trial validates on the same share, also where `train` would take none (a small regression table)
  const valSplit = request.valSplit ?? defaultValSplit;
  if (valSplit <= 0) throw new Error('a search selects on validation data: the validation split must be above 0');
  const device = engine.resolveDevice(request.device ?? 'auto');  // no CUDA device for --device cuda: said before any plan
  const reader = cachingReader();
  const data = await reader.load(request.data);
  const kind: DataKind = data.featureShape.length === 3 ? 'image' : 'table';
  const space = searchSpaceSchema.parse({ ...defaultSearchSpace(kind), ...request.space });
  // the training split's size, for the first rung's share (the test set's own count does not matter here)
  const { trainCount } = planSplit(data, request.data, { valSplit, testSplit: request.testSplit, ...(request.testData ? { test: { source: request.testData, count: 0 } } : {}) });
  const rungs = searchPlan(request, data.count, trainCount);
  const [, height, width] = data.featureShape;
  const configs = drawTrials(space, rungs[0].trials, seed, kind === 'image' ? maxImageDepth(height, width) : Infinity);
  const head = headOfDataset(data).outputs;
  const parallel = request.parallel ?? defaultParallelTrials(device);
  hooks.onEvent?.({ type: 'plan', kind, task: data.task ?? 'classification', space, rungs, data: describeDataSource(request.data), examples: data.count, parallel });

  const runs: TrialRun[] = [];
  // only the best run's outcome is kept (each holds its copies of the data until its test)
  let leader: { run: TrialRun; outcome: TrainOutcome } | undefined;
  const total = rungs.reduce((sum, rung) => sum + rung.trials, 0);
  let standing = configs;
  const overBudget = () => request.budgetSeconds !== undefined && (performance.now() - started) / 1000 >= request.budgetSeconds;
  const stopped = () => hooks.signal?.aborted === true || hooks.stopNow?.aborted === true;
  // a trial stops now when the face says so, or when another trial failed (the search ends with its error)
  const failed = new AbortController();
  const trialSignal = hooks.stopNow ? AbortSignal.any([hooks.stopNow, failed.signal]) : failed.signal;
  setMaxListeners(parallel + 4, trialSignal);  // each trial training listens to it
  let outOfTime = false;
  for (const [rungIndex, rung] of rungs.entries()) {
    // each trial's run in the rung's order, whatever order they end in (the next rung and the leaderboard
    // follow compareRuns, a total order: the same winner at any parallelism)
    const rungRuns: (TrialRun | undefined)[] = [];
    let rungDone = 0;
    await trainSome(standing, parallel, async (config: TrialConfig, index) => {
      // Ctrl-C or a face's cancel: the search ends after the trials that are training
      if (stopped()) return false;
      if (runs.length + rungDone > 0 && overBudget()) {  // the first trial always trains
        outOfTime = true;
        return false;
      }
      const outcome = await (hooks.trainTrial ?? trainModel)(trialRequest({ ...request, valSplit }, config, kind, head, rung.epochs, seed), {
        deferTest: true, reader, signal: trialSignal, ...(hooks.history ? { history: hooks.history } : {}),
      }).catch((error: unknown) => {
        if (!isGpuMemoryError(error)) failed.abort();  // the search fails: the trials beside this one stop now
        throw error;
      });
      if (outcome.status === 'cancelled') return false;  // stopped now: a trial cut short ranks with none
      const run = trialRun(config, rungIndex, rung.epochs, outcome);
      if (!leader || compareRuns(run, leader.run) < 0) leader = { run, outcome };
      rungRuns[index] = run;
      rungDone++;
      hooks.onEvent?.({ type: 'trial', run, done: runs.length + rungDone, total });
      return true;
    });
    const ran = rungRuns.filter((run): run is TrialRun => run !== undefined);
    runs.push(...ran);
    const next = rungs[rungIndex + 1];
    if (!next || outOfTime || stopped()) break;
    standing = promote(ran.map(asStanding), next.trials).map((s) => s.run.config);
  }
  const cancelled = stopped() && runs.length < total;
  if (!leader) throw new SearchCancelledError();
  const leaderboard = leaderboardOf(runs);
  await leader.outcome.runTest?.();
  return { kind, space, rungs, runs, leaderboard, best: leader.run, outcome: leader.outcome, cancelled, outOfTime, seconds: (performance.now() - started) / 1000 };
}

/**
 * Runs `train` on the configs, up to `parallel` at once, in order; once one returns false (stopped, out of time,
 * cancelled) no further one starts, and those training finish. A trial refused for GPU memory while others
 * trained trains again alone once they are done (a trial's result does not depend on when it trains), and the
 * rung goes on with one trial fewer at a time. Another error is thrown once every started trial has ended (the
 * caller cancels them). Exported for its tests.
 */
export async function trainSome<T>(configs: readonly T[], parallel: number,
  train: (config: T, index: number) => Promise<boolean>): Promise<void> {
  let next = 0;
  let going = true;
  let training = 0;
  const alone: number[] = [];
  const worker = async (): Promise<void> => {
    while (going && next < configs.length) {
      const index = next++;
      training++;
      try {
        if (!(await train(configs[index], index))) going = false;
      } catch (error) {
        if (training > 1 && isGpuMemoryError(error)) {  // others held memory: alone it may fit
          alone.push(index);
          return;  // and one trial fewer at a time for the rest of the rung
        }
        going = false;
        throw error;
      } finally {
        training--;
      }
    }
  };
  const ended = await Promise.allSettled(Array.from({ length: Math.max(1, Math.min(parallel, configs.length)) }, worker));
  const failed = ended.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed) throw failed.reason;
  for (const index of alone.sort((a, b) => a - b)) {
    if (!going || !(await train(configs[index], index))) return;
  }
}

/** The engine's refusals for GPU memory: its check before a run, or a CUDA allocation that failed (both say so). */
function isGpuMemoryError(error: unknown): boolean {
  return error instanceof Error && /too little free memory/i.test(error.message);
}

/**
 * The files read, split and normalised once for every trial (runs treat datasets as immutable: what they change
 * they copy). Only the search's own results live here, so the cache goes with the search.
 */
function cachingReader(): DataReader {
  const kept = new Map<string, Promise<unknown>>();
  const once = <T>(key: string, compute: () => Promise<T>): Promise<T> => {
    if (!kept.has(key)) kept.set(key, compute());
    return kept.get(key) as Promise<T>;
  };
  return {
    load: (source) => once(JSON.stringify(['read', source]), () => fileReader.load(source)),
    loadFor: (source, known) => once(JSON.stringify(['read for', source, known]), () => fileReader.loadFor(source, known)),
    memo: once,
  };
}

/** A trial as the training service's request: AdamW, the trial's layers and a head for the data; below 1 epoch, one pass over that share. */
export function trialRequest(request: SearchRequest, config: TrialConfig, kind: DataKind, head: number, epochs: number, seed: number): TrainRequest {
  const augment = kind === 'image' ? augmentationOf(config.augment) : undefined;
  return {
    data: request.data,
    ...(request.testData ? { testData: request.testData } : {}),
    model: {
      layers: [...hiddenLayers(config, kind), `dense:${head}`].join(','),
      optimizer: 'adamw',
      lr: config.lr,
      // 0 too: the data's default spec has a decay of its own (tables 0.01), which "no decay" must not take
      weightDecay: config.weightDecay,
      seed,
    },
    epochs: Math.max(1, Math.round(epochs)),
    ...(epochs < 1 ? { trainShare: epochs } : {}),
    batchSize: config.batchSize,
    seed,
    lrSchedule: scheduleOf(config.schedule, config.lr),
    ...(augment ? { augment } : {}),
    ...(request.valSplit !== undefined ? { valSplit: request.valSplit } : {}),
    ...(request.testSplit !== undefined ? { testSplit: request.testSplit } : {}),
    ...(request.device ? { device: request.device } : {}),
    ...(request.threads !== undefined ? { threads: request.threads } : {}),
    ...(request.precision ? { precision: request.precision } : {}),
  };
}

function scheduleOf(choice: TrialConfig['schedule'], lr: number): LrSchedule {
  if (choice === 'onecycle') return { kind: 'onecycle', maxLr: lr };
  if (choice === 'cosine') return { kind: 'cosine' };
  return { kind: 'constant' };
}

function trialRun(config: TrialConfig, rung: number, epochs: number, outcome: TrainOutcome): TrialRun {
  const history = outcome.model.training?.history ?? [];
  const last: EpochRecord | undefined = history[history.length - 1];
  // a diverged run's history stops at its last finite epoch, whose weights it does not keep: it ranks last
  const finished = outcome.status !== 'diverged';
  const score = outcome.plan.task === 'regression' ? last?.validationR2 : last?.validationAccuracy;
  const loss = last?.validationLoss;
  return {
    config, rung, epochs,
    score: finished && typeof score === 'number' && Number.isFinite(score) ? score : -Infinity,
    validationLoss: finished && typeof loss === 'number' && Number.isFinite(loss) ? loss : Infinity,
    status: outcome.status,
    seconds: outcome.model.training?.seconds ?? 0,
    trainExamples: outcome.plan.trainCount,
    ...(outcome.savedRun?.runId ? { runId: outcome.savedRun.runId } : {}),
  };
}

function asStanding(run: TrialRun): Standing & { run: TrialRun } {
  return { trial: run.config.trial, score: run.score, validationLoss: run.validationLoss, run };
}

/**
 * Runs in order, the best first: the higher validation score (at whatever rung: selection is on validation
 * data alone), then the longer run, the lower validation loss, the earlier trial.
 */
export function compareRuns(a: TrialRun, b: TrialRun): number {
  if (a.score !== b.score) return a.score > b.score ? -1 : 1;
  return b.rung - a.rung || compareStandings(asStanding(a), asStanding(b));
}

/** Each trial's best run, best first. */
function leaderboardOf(runs: readonly TrialRun[]): TrialRun[] {
  const best = new Map<number, TrialRun>();
  for (const run of runs) {
    const held = best.get(run.config.trial);
    if (!held || compareRuns(run, held) < 0) best.set(run.config.trial, run);
  }
  return [...best.values()].sort(compareRuns);
}
