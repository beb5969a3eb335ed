// The run history as the Models screen shows it: the runs saved on disk (runs:list), opening one (runs:open
// adds its model to the session's models, so the evaluation, save, comparison and the digit canvas take it
// like any other model) and deleting one. Refreshed when a training ends, since that records a run.
import type { ApiError, ModelInfo, RunSummary } from '../../../../app/api/types';
import { api } from '../api';

export interface SavedRunsDeps {
  models(): readonly ModelInfo[];
  /** runs:open added a model to the session. */
  refreshModels(): Promise<void>;
}

export class SavedRunsState {
  runs = $state.raw<RunSummary[]>([]);
  /** Files in the runs folder that could not be read: "broken.json: not valid JSON …". */
  problems = $state.raw<string[]>([]);
  directory = $state<string | undefined>();
  loaded = $state(false);
  listError = $state<ApiError | undefined>();
  /** The run being opened or deleted (one at a time), and the last such action's error by run id. */
  busyRunId = $state<string | undefined>();
  actionError = $state<{ runId: string; error: ApiError } | undefined>();
  /** The run whose Delete was pressed and waits for the confirmation. */
  confirmingDelete = $state<string | undefined>();

  private readonly deps: SavedRunsDeps;

  constructor(deps: SavedRunsDeps) {
    this.deps = deps;
  }

  /** A training ended, which records a run: a list already shown is refreshed. */
  runRecorded(): void {
    if (this.loaded) void this.refresh();
  }

  /** Names shared by more than one listed run (two runs of one file started in the same second). */
  private sharedNames = $derived.by(() => {
    const seen = new Set<string>();
    const shared = new Set<string>();
    for (const run of this.runs) (seen.has(run.name) ? shared : seen).add(run.name);
    return shared;
  });

  /** The run's name, with its id where another run has the same name: buttons need names that tell runs apart. */
  label(run: RunSummary): string {
    return this.sharedNames.has(run.name) ? `${run.name} (${run.id})` : run.name;
  }

  /** The session's model opened from this run, if any. */
  openedModelId(runId: string): string | undefined {
    return this.deps.models().find((model) => model.savedRunId === runId)?.id;
  }

  async refresh(): Promise<void> {
    const listed = await api.invoke('runs:list', {});
    this.loaded = true;
    this.listError = listed.error;
    if (!listed.result) return;
    this.runs = listed.result.runs;
    this.problems = listed.result.problems.map((problem) => problem.message);
    this.directory = listed.result.directory;
  }

  async open(runId: string): Promise<void> {
    if (this.busyRunId) return;
    this.busyRunId = runId;
    this.actionError = undefined;
    try {
      const opened = await api.invoke('runs:open', { runId });
      if (opened.error) this.actionError = { runId, error: opened.error };
      else await this.deps.refreshModels();
    } finally {
      this.busyRunId = undefined;
    }
  }

  /** Delete was pressed: the row asks for a confirmation. */
  confirmDelete(runId: string): void {
    this.confirmingDelete = runId;
  }

  /** The confirmation was declined. */
  keep(): void {
    this.confirmingDelete = undefined;
  }

  async remove(runId: string): Promise<void> {
    if (this.busyRunId) return;
    this.busyRunId = runId;
    this.actionError = undefined;
    try {
      const deleted = await api.invoke('runs:delete', { runId });
      if (deleted.error) this.actionError = { runId, error: deleted.error };
      else this.runs = this.runs.filter((run) => run.id !== runId);
    } finally {
      this.busyRunId = undefined;
      this.confirmingDelete = undefined;
    }
  }
}
