// Hyperparameter search (issue 16): trials drawn from a space with a seed, successive halving on the
// validation data (core/search/halving.ts), every trial a run of the training service (in the run history
// when the face asks), and the test set evaluated once, for the winner. The CLI's `nnstudio search` runs it.
import { headOfDataset } from '../core/model/head';
import { compareStandings, halvingPlan, promote, type Rung, type Standing } from '../core/search/halving';
import {
  augmentationOf, defaultSearchSpace, drawTrials, hiddenLayers, maxImageDepth, searchSpaceSchema,
  type DataKind, type SearchSpace, type TrialConfig,
} from '../core/search/space';
import type { EpochRecord } from '../core/model/modelFile';
import type { LrSchedule } from '../core/model/trainingControl';
import type * as engine from '../engine';
import type { Dataset } from '../core/data/dataset';
import { describeDataSource, type DataSource } from './dataSources';
import type { RunNaming, RunStore } from './runs';
import { trainModel, type TrainOutcome, type TrainRequest } from './training';
import { fileReader, type DataReader } from './trainingSetup';

export interface SearchRequest {
  data: DataSource;
  testData?: DataSource;
  /** Trials drawn (default 27). */
  trials?: number;
  /** Epochs of the first rung and of the last (default: 1 and 9 for images, 20 and 180 for tables, which train for longer). */
  minEpochs?: number;
  maxEpochs?: number;
  /** Each rung keeps the best 1/eta (default 3). */
  eta?: number;
  /** Replaces parts of the data kind's default space. */
  space?: Partial<SearchSpace>;
  /** Draws, splits and every trial's weights (default 0). */
  seed?: number;
  valSplit?: number;
  testSplit?: number;
  device?: engine.DeviceChoice;
  threads?: number;
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
  runId?: string;
}

export type SearchEvent =
  | { type: 'plan'; kind: DataKind; space: SearchSpace; rungs: Rung[]; data: string; examples: number }
  | { type: 'trial'; run: TrialRun; done: number; total: number };

export interface SearchHooks {
  onEvent?: (event: SearchEvent) => void;
  signal?: AbortSignal;
  history?: { store: RunStore; naming?: RunNaming };
}

export interface SearchOutcome {
  kind: DataKind;
  space: SearchSpace;
  rungs: Rung[];
  /** Every trial at every rung it reached, in the order they ran. */
  runs: TrialRun[];
  /** Each trial's run at its highest rung, best first (the highest rung first, then by score). */
  leaderboard: TrialRun[];
  best: TrialRun;
  /** The best trial's run, its test set evaluated (the only test evaluation of the search). */
  outcome: TrainOutcome;
  /** The search ended before its last rung (cancelled): the best so far. */
  cancelled: boolean;
  seconds: number;
}

/** The rungs' epochs when the request names none: a table trains for longer (train's default is 200 epochs). */
const defaultEpochs: Record<DataKind, { min: number; max: number }> = { image: { min: 1, max: 9 }, table: { min: 20, max: 180 } };

export async function runSearch(request: SearchRequest, hooks: SearchHooks = {}): Promise<SearchOutcome> {
  const started = performance.now();
  const seed = request.seed ?? 0;
  const reader = cachingReader();
  const data = await reader.load(request.data);
  if ((request.valSplit ?? 0.1) <= 0) throw new Error('a search selects on validation data: the validation split must be above 0');
  const kind: DataKind = data.featureShape.length === 3 ? 'image' : 'table';
  const space = searchSpaceSchema.parse({ ...defaultSearchSpace(kind), ...request.space });
  const epochs = defaultEpochs[kind];
  const minEpochs = request.minEpochs ?? Math.min(epochs.min, request.maxEpochs ?? epochs.min);
  const rungs = halvingPlan(request.trials ?? 27, minEpochs, request.maxEpochs ?? Math.max(epochs.max, minEpochs), request.eta ?? 3);
  const [, height, width] = data.featureShape;
  const configs = drawTrials(space, rungs[0].trials, seed, kind === 'image' ? maxImageDepth(height, width) : Infinity);
  const head = headOfDataset(data).outputs;
  hooks.onEvent?.({ type: 'plan', kind, space, rungs, data: describeDataSource(request.data), examples: data.count });

  const runs: TrialRun[] = [];
  const outcomes = new Map<number, TrainOutcome>();
  const total = rungs.reduce((sum, rung) => sum + rung.trials, 0);
  let standing = configs;
  let cancelled = false;
  for (const [rungIndex, rung] of rungs.entries()) {
    const rungRuns: TrialRun[] = [];
    for (const config of standing) {
      if (hooks.signal?.aborted) break;
      const outcome = await trainModel(trialRequest(request, config, kind, head, rung.epochs, seed), {
        deferTest: true, reader, signal: hooks.signal, ...(hooks.history ? { history: hooks.history } : {}),
      });
      if (outcome.status === 'cancelled') break;  // a trial cut short ranks with none: the best so far stands
      const run = trialRun(config, rungIndex, rung.epochs, outcome);
      outcomes.set(config.trial, outcome);
      rungRuns.push(run);
      runs.push(run);
      hooks.onEvent?.({ type: 'trial', run, done: runs.length, total });
    }
    if (hooks.signal?.aborted || rungRuns.length === 0) {
      cancelled = true;
      break;
    }
    const next = rungs[rungIndex + 1];
    if (next) standing = promote(rungRuns.map(asStanding), next.trials).map((s) => s.run.config);
  }
  if (runs.length === 0) throw new Error('the search was cancelled before its first trial finished');
  const leaderboard = leaderboardOf(runs);
  const best = leaderboard[0];
  const outcome = outcomes.get(best.config.trial)!;
  await outcome.runTest?.();
  return { kind, space, rungs, runs, leaderboard, best, outcome, cancelled, seconds: (performance.now() - started) / 1000 };
}

/** The files read once for every trial (runs treat datasets as immutable: splits and normalisation copy). */
function cachingReader(): DataReader {
  const read = new Map<string, Promise<Dataset>>();
  const once = (key: string, load: () => Promise<Dataset>) => {
    if (!read.has(key)) read.set(key, load());
    return read.get(key)!;
  };
  return {
    load: (source) => once(JSON.stringify(source), () => fileReader.load(source)),
    loadFor: (source, known) => once(JSON.stringify([source, known]), () => fileReader.loadFor(source, known)),
  };
}

/** A trial as the training service's request: AdamW, the trial's layers and a head for the data. */
export function trialRequest(request: SearchRequest, config: TrialConfig, kind: DataKind, head: number, epochs: number, seed: number): TrainRequest {
  const augment = kind === 'image' ? augmentationOf(config.augment) : undefined;
  return {
    data: request.data,
    ...(request.testData ? { testData: request.testData } : {}),
    model: {
      layers: [...hiddenLayers(config, kind), `dense:${head}`].join(','),
      optimizer: 'adamw',
      lr: config.lr,
      ...(config.weightDecay > 0 ? { weightDecay: config.weightDecay } : {}),
      seed,
    },
    epochs,
    batchSize: config.batchSize,
    seed,
    lrSchedule: scheduleOf(config.schedule, config.lr),
    ...(augment ? { augment } : {}),
    ...(request.valSplit !== undefined ? { valSplit: request.valSplit } : {}),
    ...(request.testSplit !== undefined ? { testSplit: request.testSplit } : {}),
    ...(request.device ? { device: request.device } : {}),
    ...(request.threads !== undefined ? { threads: request.threads } : {}),
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
  const score = last?.validationR2 ?? last?.validationAccuracy;
  const loss = last?.validationLoss;
  return {
    config, rung, epochs,
    score: typeof score === 'number' && Number.isFinite(score) ? score : -Infinity,
    validationLoss: typeof loss === 'number' && Number.isFinite(loss) ? loss : Infinity,
    status: outcome.status,
    seconds: outcome.model.training?.seconds ?? 0,
    ...(outcome.savedRun?.runId ? { runId: outcome.savedRun.runId } : {}),
  };
}

function asStanding(run: TrialRun): Standing & { run: TrialRun } {
  return { trial: run.config.trial, score: run.score, validationLoss: run.validationLoss, run };
}

/** Each trial's highest rung, the highest rungs first, then by score. */
function leaderboardOf(runs: readonly TrialRun[]): TrialRun[] {
  const highest = new Map<number, TrialRun>();
  for (const run of runs) highest.set(run.config.trial, run);
  return [...highest.values()].sort((a, b) => b.rung - a.rung || compareStandings(asStanding(a), asStanding(b)));
}
