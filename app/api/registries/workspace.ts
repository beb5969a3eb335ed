// The session's one workspace document and its revision. Every tab reads it at start (workspace:get) and
// replaces it as the user edits (workspace:update); each change goes to every tab as workspace:changed,
// with the id of the tab that made it so that tab can ignore its own echo. The last writer wins.
import type { Workspace } from '../workspace';
import type { SessionEvents } from './events';

export class WorkspaceRegistry {
  private state: Workspace = {};
  private revision = 0;
  private readonly changeListeners = new Set<(state: Workspace) => void>();

  constructor(private readonly events: SessionEvents) {}

  get(): { revision: number; state: Workspace } {
    return { revision: this.revision, state: this.state };
  }

  /** Replaces the document; `clientId` names the tab that sent it. */
  update(state: Workspace, clientId: string): { revision: number } {
    this.state = state;
    this.revision += 1;
    this.events.emit({ event: 'workspace:changed', payload: { revision: this.revision, clientId, state } });
    for (const listener of this.changeListeners) listener(state);
    return { revision: this.revision };
  }

  /** Calls `listener` after every update (the last-session file follows the workspace); returns the unsubscriber. */
  onChange(listener: (state: Workspace) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }
}
