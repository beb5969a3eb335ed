// The run history as the session offers it: runs:list, :get, :delete, and :open (the run's model joins the
// session's models). The runs themselves live in a RunStore on disk, shared with the CLI.
import type { RunStore } from '../../services/runs';
import type { ModelInfo, SavedRun, SavedRunList } from '../types';
import type { ModelRegistry } from './models';

export class SavedRunRegistry {
  constructor(
    private readonly store: RunStore,
    private readonly models: ModelRegistry,
  ) {}

  async list(): Promise<SavedRunList> {
    return { directory: this.store.directory, ...(await this.store.list()) };
  }

  async get(runId: string): Promise<SavedRun> {
    const record = await this.store.get(runId);
    const modelPath = this.store.modelPath(record);
    return { ...record, ...(modelPath ? { modelPath } : {}) };
  }

  async delete(runId: string): Promise<{ deleted: string }> {
    return { deleted: await this.store.delete(runId) };
  }

  open(runId: string): Promise<ModelInfo> {
    return this.models.openSaved(this.store, runId);
  }
}
