// The session's hyperparameter searches by id (services/search.ts): search:start turns an open dataset into a
// SearchRequest, each trial run becomes search:progress, and the end keeps the winner's model and test
// evaluation (as a finished training run keeps its own) and sends search:done. One search or training at a
// time: a second would share the device with the first.
import { services } from '../../services';
import { SearchCancelledError, type SearchEvent, type SearchOutcome, type SearchRequest, type TrialRun } from '../../services/search';
import { errorValue } from '../errors';
import type { ParsedPayloadOf } from '../schemas';
import type { SearchInfo, SearchTrialRun } from '../types';
import type { SessionEvents } from './events';
import { namingOf, trainingDone, type RunRegistryWiring } from './runs';

interface SearchEntry {
  info: SearchInfo;
  /** Stop: after the trials that are training. */
  abort: AbortController;
  /** The session closing: now. */
  stopNow: AbortController;
  /** Settles (never rejects) once search:done was sent. */
  finished: Promise<void>;
}

/** A training run's wiring (the same registries and run history), with `busy` required: the training runs. */
export type SearchRegistryWiring = RunRegistryWiring & { busy: () => string | undefined };

export class SearchRegistry {
  private readonly records = new Map<string, SearchEntry>();

  constructor(private readonly wiring: SearchRegistryWiring) {}

  private get(searchId: string): SearchEntry {
    const entry = this.records.get(searchId);
    if (!entry) throw new Error(`no search with id "${searchId}"`);
    return entry;
  }

  start(payload: ParsedPayloadOf<'search:start'>): { searchId: string } {
    const { datasets, ids } = this.wiring;
    const data = datasets.get(payload.datasetId);
    const testData = payload.testDatasetId !== undefined ? datasets.get(payload.testDatasetId) : undefined;
    if (data.info.unlabeled) throw Object.assign(new Error(`${data.info.name} was opened without a label column: open it again with its label column to search on it`), { field: 'datasetId' });
    const why = this.wiring.busy() ?? this.running();
    if (why) throw new Error(why);
    const searchId = ids.next('search');
    const request: SearchRequest = {
      data: data.source,
      ...(testData ? { testData: testData.source } : {}),
      trials: payload.trials, minEpochs: payload.minEpochs, maxEpochs: payload.maxEpochs, eta: payload.eta, space: payload.space, budgetSeconds: payload.budgetSeconds,
      seed: payload.seed, valSplit: payload.valSplit, testSplit: payload.testSplit, device: payload.device,
      ...(payload.precision ? { precision: payload.precision } : {}),
      ...(payload.parallel !== undefined ? { parallel: payload.parallel } : {}),
    };
    const entry: SearchEntry = {
      info: { searchId, datasetId: payload.datasetId, state: 'starting', runs: [] },
      abort: new AbortController(), stopNow: new AbortController(), finished: Promise.resolve(),
    };
    this.records.set(searchId, entry);
    const { history } = this.wiring;
    const naming = namingOf(data, testData);
    entry.finished = services.search
      .run(request, {
        signal: entry.abort.signal, stopNow: entry.stopNow.signal,
        onEvent: (event) => this.progress(entry, event), ...(history ? { history: { store: history, naming } } : {}),
      })
      .then((outcome) => this.finish(entry, outcome, data.info.name))
      .catch((error: unknown) => this.done(entry, error instanceof SearchCancelledError ? { cancelled: true } : { error: this.wiring.folder.showNames(errorValue(error).message) }));
    return { searchId };
  }

  /** Why another search may not start: the one going, or undefined. */
  running(): string | undefined {
    const going = [...this.records.values()].find((entry) => entry.info.state !== 'finished');
    if (!going) return undefined;
    const { info } = going;
    const where = info.plan ? ` (${info.runs.length} of ${info.plan.total} trial runs)` : '';
    return `${info.searchId} is still searching${where}: wait for it to finish, or stop it on the Search screen, before starting another`;
  }

  cancel(searchId: string): SearchInfo {
    const entry = this.get(searchId);
    if (entry.info.state === 'finished') throw new Error(`search ${searchId} has already finished`);
    entry.abort.abort();
    entry.info.state = 'stopping';
    return entry.info;
  }

  status(searchId: string): SearchInfo {
    return this.get(searchId).info;
  }

  list(): SearchInfo[] {
    return [...this.records.values()].map((entry) => entry.info);
  }

  readsDataset(datasetId: string): boolean {
    return [...this.records.values()].some((entry) => entry.info.state !== 'finished' && entry.info.datasetId === datasetId);
  }

  /** The searches not finished yet. */
  unfinished(): string[] {
    return [...this.records.values()].filter((entry) => entry.info.state !== 'finished').map((entry) => entry.info.searchId);
  }

  /** Every search stopped now (its training trial cancelled); settles when each has ended. */
  stopAll(): Promise<void> {
    for (const entry of this.records.values()) entry.stopNow.abort();
    return Promise.all([...this.records.values()].map((entry) => entry.finished)).then(() => undefined);
  }

  private progress(entry: SearchEntry, event: SearchEvent): void {
    const { info } = entry;
    const emit = (payload: Parameters<SessionEvents['emit']>[0]) => this.wiring.events.emit(payload);
    if (event.type === 'plan') {
      const total = event.rungs.reduce((sum, rung) => sum + rung.trials, 0);
      info.plan = { kind: event.kind, task: event.task, rungs: event.rungs, data: this.wiring.folder.showNames(event.data), examples: event.examples, total, parallel: event.parallel };
      if (info.state === 'starting') info.state = 'running';
      return emit({ event: 'search:progress', payload: { searchId: info.searchId, type: 'plan', plan: info.plan } });
    }
    const run = trialRunInfo(event.run);
    info.runs.push(run);
    emit({ event: 'search:progress', payload: { searchId: info.searchId, type: 'trial', run, done: event.done, total: event.total } });
  }

  /** Keeps the winner's model and test evaluation in the session, as a finished training run does. */
  private finish(entry: SearchEntry, result: SearchOutcome, datasetName: string): void {
    const { models, evaluations } = this.wiring;
    const { outcome, best } = result;
    // the winner's run in the run history: a saved project or the last session keeps the model through it
    const modelId = models.add({ name: `${datasetName} (${entry.info.searchId}, trial ${best.config.trial})`, model: outcome.model, ...(best.runId ? { savedRunId: best.runId } : {}) });
    const tested = outcome.testPredictions;
    const evaluationId = tested && evaluations.keep({
      modelId,
      predictions: { classLabels: outcome.model.labels, inputShape: outcome.model.inputShape, ...tested },
    });
    const done = trainingDone(`${entry.info.searchId} trial ${best.config.trial}`, outcome, undefined, modelId, evaluationId);
    this.done(entry, {
      runs: result.runs.map(trialRunInfo),  // each rung's in its trials' order (the events came as trials ended)
      leaderboard: result.leaderboard.map(trialRunInfo),
      best: trialRunInfo(best),
      outcome: { ...done, message: this.wiring.folder.showNames(done.message) },
      cancelled: result.cancelled,
      ...(result.outOfTime ? { outOfTime: true } : {}),
      seconds: result.seconds,
    });
  }

  private done(entry: SearchEntry, ending: Partial<SearchInfo>): void {
    Object.assign(entry.info, ending, { state: 'finished' });
    this.wiring.events.emit({ event: 'search:done', payload: entry.info });
  }
}

function trialRunInfo(run: TrialRun): SearchTrialRun {
  const { trial, depth, width, lr, schedule, batchSize, weightDecay, augment } = run.config;
  return {
    trial, rung: run.rung, epochs: run.epochs,
    score: Number.isFinite(run.score) ? run.score : null,
    validationLoss: Number.isFinite(run.validationLoss) ? run.validationLoss : null,
    status: run.status, seconds: run.seconds, trainExamples: run.trainExamples,
    ...(run.runId ? { savedRunId: run.runId } : {}),
    settings: { depth, width, lr, schedule, batchSize, weightDecay, augment },
  };
}
