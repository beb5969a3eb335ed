// The UI API's one implementation: the gate validates a payload, the handler table (handlers.ts) hands it to
// the registry that answers it (registries/: datasets, models, evaluations, runs, saved runs), each with its
// own state. Electron's main process and `serve` both wrap `dispatch`; neither holds logic of its own.
// Errors are returned as values, never thrown across the boundary.
import { stderrLogger, type Logger } from '../core/log';
import { defaultRunStore, type RunStore } from '../services/runs';
import { errorValue, validationError } from './errors';
import { handlerTable } from './handlers';
import { DatasetRegistry } from './registries/datasets';
import { EvaluationRegistry } from './registries/evaluations';
import { SessionEvents } from './registries/events';
import { IdSequence } from './registries/ids';
import { ModelRegistry } from './registries/models';
import { RunRegistry } from './registries/runs';
import { SearchRegistry } from './registries/searches';
import { SavedRunRegistry } from './registries/savedRuns';
import { SessionFolder } from './registries/sessionFolder';
import { WorkspaceRegistry } from './registries/workspace';
import { ProjectRegistry } from './registries/projects';
import { isChannel, payloadSchemas } from './schemas';
import type { ApiEvent, ApiResponse, ProjectOpened, SessionChanged } from './types';

export { downloadFileName, exportExtensions } from './registries/models';

export interface ApiOptions {
  /** Where uploads and checkpoints are written (default: a new folder under the OS temp dir, removed by close()). */
  uploadDir?: string;
  /**
   * Where finished runs are recorded and runs:* read (default: the user's data folder, or NNSTUDIO_DATA_DIR);
   * false records nothing (runs:* still read the default store).
   */
  runHistory?: RunStore | false;
  /** Where failures nobody asked about go (a listener that threw, files close() could not remove); default stderr. */
  logger?: Logger;
  /** Keep the last session in the data folder after every change and on close (serve and the desktop app). */
  keepLastSession?: boolean;
  /** How long close() waits for the runs it cancelled (default 10 s); files a run still uses outlive it until the run ends. */
  closeTimeoutMs?: number;
}

export interface Api {
  /** Validates `payload` for `channel` and runs it; resolves to `{ result }` or `{ error }`, never rejects. */
  dispatch(channel: string, payload: unknown): Promise<ApiResponse<unknown>>;
  /** The last session kept in the data folder, opened into this one (at start-up); undefined when there is none. */
  openLastSession(): Promise<ProjectOpened | undefined>;
  /** Receives every event of the session; returns the function that unsubscribes. */
  subscribe(listener: (event: ApiEvent) => void): () => void;
  /**
   * Cancels the running trainings and waits for them to end (their training:done is still sent), then removes
   * the session's files. Past closeTimeoutMs it returns; the files go when the last run has ended.
   */
  close(): Promise<void>;
}

export const defaultCloseTimeoutMs = 10_000;

/** The channels that change what every tab lists: each tab lists them again on session:changed. */
const listsChangedBy: Partial<Record<string, SessionChanged['lists']>> = {
  'datasets:open': ['datasets'],
  'datasets:close': ['datasets'],
  'datasets:reopen': ['datasets'],
  'datasets:setClassNames': ['datasets'],
  'models:import': ['models'],
  'runs:open': ['models'],
  'projects:open': ['datasets', 'models'],
};

/** True when `promise` settled within `ms`, false otherwise (the timer does not hold the process). */
function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    timer.unref();
  });
  return Promise.race([promise.then(() => true), timeout]).finally(() => clearTimeout(timer));
}

export function createApi(options: ApiOptions = {}): Api {
  const logger = options.logger ?? stderrLogger;
  const ids = new IdSequence();
  const folder = new SessionFolder(options.uploadDir);
  // A message about the session's files names them as the user knows them (an upload's name), never by path.
  const events = new SessionEvents(logger, (message) => folder.showNames(message));
  const datasets: DatasetRegistry = new DatasetRegistry(ids, folder, (datasetId): boolean => runs.readsDataset(datasetId) || searches.readsDataset(datasetId));
  const models = new ModelRegistry(ids, folder);
  const evaluations = new EvaluationRegistry(ids, models, datasets);
  const runStore = options.runHistory || defaultRunStore;
  const history = options.runHistory === false ? undefined : runStore;
  const runs: RunRegistry = new RunRegistry({ ids, folder, events, datasets, models, evaluations, history, busy: () => searches.running() });
  const searches: SearchRegistry = new SearchRegistry({ ids, folder, events, datasets, models, evaluations, history, busy: () => runs.running() });
  const savedRuns = new SavedRunRegistry(runStore, models);
  const workspace = new WorkspaceRegistry(events);
  const projects = new ProjectRegistry({ datasets, models, runs, savedRuns, workspace, logger, keepLastSession: options.keepLastSession ?? false });
  const handlers = handlerTable({ datasets, models, evaluations, runs, searches, savedRuns, workspace, projects });
  let closed = false;

  async function dispatch(channel: string, payload: unknown): Promise<ApiResponse<unknown>> {
    if (closed) return { error: { message: 'the session is closed' } };
    if (typeof channel !== 'string' || !isChannel(channel)) {
      return { error: { message: `unknown channel ${JSON.stringify(channel)}`, field: 'channel' } };
    }
    const parsed = payloadSchemas[channel].safeParse(payload);
    if (!parsed.success) return { error: validationError(channel, parsed.error.issues) };
    try {
      const handler = handlers[channel] as (payload: unknown) => Promise<unknown> | unknown;
      const result = await handler(parsed.data);
      const lists = listsChangedBy[channel];
      if (lists) events.emit({ event: 'session:changed', payload: { lists } });
      return { result };
    } catch (error) {
      const value = errorValue(error);
      return { error: { ...value, message: folder.showNames(value.message) } };
    }
  }

  /** Once no run is left: no more events, the session's files removed, its records forgotten. */
  async function removeSessionFiles(): Promise<void> {
    events.clear();
    await folder.dispose([...datasets.files(), ...runs.checkpointFiles()]);
    datasets.clear();
    models.clear();
    evaluations.clear();
  }

  async function close(): Promise<void> {
    if (closed) return;
    // the last session is written before the runs stop and the uploads go
    await projects.keepLastSession();
    projects.close();
    closed = true;
    // The engine stops within one step; a run still loading its data finishes that first.
    const stopped = Promise.all([runs.stopAll(), searches.stopAll()]);
    const removed = stopped.then(removeSessionFiles).catch((error: unknown) => {
      logger.error(`closing the session: removing its files in ${folder.path ?? '(no folder)'}`, error);
    });
    const timeoutMs = options.closeTimeoutMs ?? defaultCloseTimeoutMs;
    if (await settlesWithin(stopped, timeoutMs)) return removed;
    logger.warn(`closing the session: ${[...runs.unfinished(), ...searches.unfinished()].join(', ')} still stopping after ${timeoutMs} ms; ` +
      `the session's files in ${folder.path} are removed when they end`);
  }

  return { dispatch, subscribe: (listener) => events.subscribe(listener), close, openLastSession: () => projects.openLastSession() };
}
