// The screens' drafts kept by the session on the server (workspace:get / workspace:update / workspace:changed):
// at start and on every reconnection the page takes the session's workspace and re-attaches to its runs; after
// each edit (a pause in typing) it sends the whole workspace; another tab's change arrives as an event and is
// applied here. Nothing is sent until the first restore has finished, so a fresh page never overwrites the
// session with its empty drafts; what was just applied is not sent back.
import type { RunInfo, Workspace, WorkspaceChanged } from '../../../../app/api/types';
import { api } from '../api';

/** The parts of the studio the workspace covers. */
export interface WorkspaceParts {
  capture(): Workspace;
  apply(state: Workspace, runs: readonly RunInfo[]): Promise<void>;
}

const sendDelayMs = 300;

export class WorkspaceSync {
  /** Whether the session's workspace has been applied (until then nothing is sent). */
  ready = $state(false);
  private readonly clientId = crypto.randomUUID();
  private lastKnown = '';
  /** The JSON waiting for its timer (an effect that runs again with the same JSON does not delay it). */
  private pending: string | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private applying = 0;

  constructor(private readonly parts: WorkspaceParts) {
    $effect.root(() => {
      $effect(() => {
        const json = JSON.stringify(this.parts.capture());
        if (this.ready && this.applying === 0 && json !== this.lastKnown && json !== this.pending) this.schedule(json);
      });
    });
    // a reload right after an edit must not lose it
    window.addEventListener('pagehide', () => void this.flush());
  }

  /** Sends what waits for its timer now (a project is saved from the session's workspace: it must be current). */
  async flush(): Promise<void> {
    if (this.pending === undefined) return;
    clearTimeout(this.timer);
    await this.send(this.pending);
  }

  /** The session's workspace and runs, applied (at start and after reconnecting). */
  async restore(): Promise<void> {
    const [workspace, runs] = await Promise.all([api.invoke('workspace:get', {}), api.invoke('training:list', {})]);
    if (workspace.result) await this.applyState(workspace.result.state, runs.result ?? []);
    this.ready = true;
  }

  /** Another tab changed the workspace: take it (and any run it now watches). */
  async changed(change: WorkspaceChanged): Promise<void> {
    if (change.clientId === this.clientId || !this.ready) return;
    const runs = await api.invoke('training:list', {});
    await this.applyState(change.state, runs.result ?? []);
  }

  private async applyState(state: Workspace, runs: readonly RunInfo[]): Promise<void> {
    clearTimeout(this.timer);
    this.pending = undefined;
    this.applying += 1;
    try {
      this.lastKnown = JSON.stringify(state);
      await this.parts.apply(state, runs);
    } finally {
      this.applying -= 1;
    }
    // what applying made of it (a check, a preview) is the page's own state from here on
    this.lastKnown = JSON.stringify(this.parts.capture());
  }

  private schedule(json: string): void {
    clearTimeout(this.timer);
    this.pending = json;
    this.timer = setTimeout(() => void this.send(json), sendDelayMs);
  }

  private async send(json: string): Promise<void> {
    this.pending = undefined;
    if (json === this.lastKnown) return;
    this.lastKnown = json;
    const answer = await api.invoke('workspace:update', { clientId: this.clientId, state: JSON.parse(json) as Workspace });
    if (answer.error) console.error(`NN Studio: the session did not keep the workspace: ${answer.error.message}`);
  }
}
