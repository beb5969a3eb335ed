// The Search screen: the search's settings, the search being watched (its plan and trial runs as they end,
// then the leaderboard and the winner) and its controls: start and stop. A reloaded page finds the session's
// latest search (search:list). docs/SEARCH.md says what a search does.
import type { ApiError, ApiEvent, PayloadOf, SearchInfo, TrainingDone } from '../../../../app/api/types';
import { api } from '../api';
import type { Precision } from '../../../../app/core/model/precision';
import { askedPrecision } from './trainingDrafts';

export interface SearchDraft {
  trials: number | null;
  /** Empty: the search's defaults (by the data's size). */
  minEpochs: number | null;
  maxEpochs: number | null;
  eta: number | null;
  seed: number | null;
  /** Seconds; empty: no limit. */
  budgetSeconds: number | null;
}

export interface SearchDeps {
  datasetId(): string | undefined;
  device(): PayloadOf<'search:start'>['device'];
  /** The Train screen's GPU arithmetic, which the trials take too. */
  precision(): Precision;
  /** A search ended (its trials are saved runs; with a winner, its model is in the session). */
  ended(info: SearchInfo): void;
}

type SearchEvent = Extract<ApiEvent, { event: 'search:progress' | 'search:done' }>;

export class SearchState {
  readonly settings = $state<SearchDraft>({ trials: 27, minEpochs: null, maxEpochs: null, eta: 3, seed: 0, budgetSeconds: null });
  search = $state.raw<SearchInfo | undefined>();
  starting = $state(false);
  error = $state<ApiError | undefined>();
  running = $derived(this.search !== undefined && this.search.state !== 'finished');

  constructor(private readonly deps: SearchDeps) {}

  async start(): Promise<void> {
    const datasetId = this.deps.datasetId();
    if (!datasetId || this.running || this.starting) return;
    const { trials, minEpochs, maxEpochs, eta, seed, budgetSeconds } = this.settings;
    const payload: PayloadOf<'search:start'> = {
      datasetId,
      ...(trials !== null ? { trials } : {}),
      ...(minEpochs !== null ? { minEpochs } : {}),
      ...(maxEpochs !== null ? { maxEpochs } : {}),
      ...(eta !== null ? { eta } : {}),
      ...(seed !== null ? { seed } : {}),
      ...(budgetSeconds !== null ? { budgetSeconds } : {}),
      ...(this.deps.device() ? { device: this.deps.device() } : {}),
      ...askedPrecision(this.deps.device() ?? 'auto', this.deps.precision()),
    };
    this.error = undefined;
    this.starting = true;
    try {
      const answer = await api.invoke('search:start', payload);
      if (answer.error) return void (this.error = answer.error);
      const status = await api.invoke('search:status', { searchId: answer.result.searchId });
      if (status.result) this.search = status.result;
    } finally {
      this.starting = false;
    }
  }

  async stop(): Promise<void> {
    if (!this.search || !this.running) return;
    const answer = await api.invoke('search:cancel', { searchId: this.search.searchId });
    if (answer.error) this.error = answer.error;
    else this.search = answer.result;
  }

  /** The session's latest search, on a page load or a reconnection. */
  async attachLatest(): Promise<void> {
    const answer = await api.invoke('search:list', {});
    const latest = answer.result?.at(-1);
    if (latest) this.search = latest;
  }

  receive(event: ApiEvent): void {
    if (event.event !== 'search:progress' && event.event !== 'search:done') return;
    const searchEvent = event as SearchEvent;
    const shown = this.search;
    if (searchEvent.event === 'search:done') {
      // any search's end (another tab's too) adds a model and saved runs to the lists
      this.deps.ended(searchEvent.payload);
      if (!shown || shown.searchId === searchEvent.payload.searchId || shown.state === 'finished') this.search = searchEvent.payload;
      return;
    }
    const progress = searchEvent.payload;
    if (!shown || shown.searchId !== progress.searchId || shown.state === 'finished') return;
    if (progress.type === 'plan') this.search = { ...shown, state: shown.state === 'starting' ? 'running' : shown.state, plan: progress.plan };
    else if (!shown.runs.some((run) => run.trial === progress.run.trial && run.rung === progress.run.rung)) {
      this.search = { ...shown, runs: [...shown.runs, progress.run] };
    }
  }
}

/** The winner as a finished run, for Evaluate (its test set was evaluated as the search ended). */
export function winnerOf(info: SearchInfo): TrainingDone | undefined {
  return info.outcome?.test ? info.outcome : undefined;
}
