// Projects from the page: the current project's name, the recent list, Save (as the current project or by a
// name) and Open (a recent one, a name or a path). Opening replaces the session's datasets, models and
// workspace on the server; every tab follows through workspace:changed and reloads its lists.
import type { ApiError, ProjectOpened, ProjectsInfo } from '../../../../app/api/types';
import { api } from '../api';

export interface ProjectDeps {
  /** The session changed under the page (a project opened): datasets and models to list again. */
  reloadCatalog(): Promise<void>;
  /** Sends the page's last edits to the session (before it is saved). */
  flushWorkspace(): Promise<void>;
}

export class ProjectState {
  info = $state.raw<ProjectsInfo>({ recent: [], folder: '' });
  busy = $state(false);
  error = $state<ApiError | undefined>();
  /** What the last open or save said: the file, and what could not be opened. */
  outcome = $state.raw<{ message: string; notes: string[]; path: string } | undefined>();

  constructor(private readonly deps: ProjectDeps) {}

  /** The project's file name without its folder and extension, or undefined for an unsaved session. */
  get currentName(): string | undefined {
    return this.info.current ? baseName(this.info.current) : undefined;
  }

  async refresh(): Promise<void> {
    const answer = await api.invoke('projects:info', {});
    if (answer.result) this.info = answer.result;
  }

  /** Saves as the current project, or as `name` (a name or a path). */
  async save(name?: string): Promise<boolean> {
    return this.run(async () => {
      await this.deps.flushWorkspace();
      const answer = await api.invoke('projects:save', name !== undefined ? { path: name } : {});
      if (answer.error) return answer.error;
      this.outcome = { message: `Saved ${timeOfDay()}`, notes: [], path: answer.result.path };
      return undefined;
    });
  }

  async open(path: string): Promise<boolean> {
    return this.run(async () => {
      const answer = await api.invoke('projects:open', { path });
      if (answer.error) return answer.error;
      this.outcome = { message: openedMessage(answer.result), notes: answer.result.notes, path: answer.result.path };
      await this.deps.reloadCatalog();
      return undefined;
    });
  }

  private async run(action: () => Promise<ApiError | undefined>): Promise<boolean> {
    this.busy = true;
    this.error = undefined;
    this.outcome = undefined;
    try {
      this.error = await action();
      await this.refresh();
      return this.error === undefined;
    } finally {
      this.busy = false;
    }
  }
}

export function baseName(file: string): string {
  return (file.split(/[\\/]/).pop() ?? file).replace(/\.nnstudio$/i, '');
}

/** "at 14:05", for "Saved at 14:05" (the rail is narrow; the path is the outcome's tooltip). */
function timeOfDay(): string {
  return `at ${new Date().toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })}`;
}

function openedMessage(opened: ProjectOpened): string {
  const datasets = `${opened.datasets.length} dataset${opened.datasets.length === 1 ? '' : 's'}`;
  const models = `${opened.models} model${opened.models === 1 ? '' : 's'}`;
  return `Opened ${baseName(opened.path)}: ${datasets}, ${models}`;
}
