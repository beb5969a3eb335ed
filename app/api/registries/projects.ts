// Projects: the session saved as a .nnstudio file and opened again (projects:save, :open, :recent), and the
// last session, kept in the data folder after every change and opened at start-up. Uploaded files live in the
// session's temporary folder, so a project copies them into a folder beside it; files opened by path stay
// where they are. Opening a project opens its datasets and its runs' models; one that cannot be opened is
// named in the answer's notes, and the rest opens.
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { writeFileAtomic } from '../../core/files/atomic';
import type { Logger } from '../../core/log';
import type { DataSource } from '../../services/dataSources';
import { dataDirectory } from '../../services/runs';
import { lastSessionFile, projectDataFolder, projectFilePath, projectFormat, projectsDirectory, readProject, writeProject, type Project, type ProjectDataSource } from '../projectFile';
import type { DatasetInfo, ProjectOpened, ProjectsInfo, Workspace } from '../types';
import type { DatasetRecord, DatasetRegistry } from './datasets';
import type { ModelRegistry } from './models';
import type { RunRegistry } from './runs';
import type { SavedRunRegistry } from './savedRuns';
import type { WorkspaceRegistry } from './workspace';

export interface ProjectWiring {
  datasets: DatasetRegistry;
  models: ModelRegistry;
  runs: RunRegistry;
  savedRuns: SavedRunRegistry;
  workspace: WorkspaceRegistry;
  logger: Logger;
  /** Keep the last session in the data folder (serve and the desktop app do; tests and the CLI do not). */
  keepLastSession: boolean;
}

const maxRecent = 10;
const lastSessionDelayMs = 1000;

export class ProjectRegistry {
  /** The project this session was opened from or last saved as. */
  private current: string | undefined;
  private lastSessionTimer: NodeJS.Timeout | undefined;
  private readonly stopFollowing: () => void;

  constructor(private readonly wiring: ProjectWiring) {
    this.stopFollowing = wiring.keepLastSession ? wiring.workspace.onChange(() => this.scheduleLastSession()) : () => {};
  }

  async info(): Promise<ProjectsInfo> {
    return { ...(this.current ? { current: this.current } : {}), recent: await readRecent(), folder: projectsDirectory() };
  }

  /** Saves the session as `nameOrPath` (a name goes into the projects folder), or as the current project. */
  async save(nameOrPath: string | undefined): Promise<{ path: string }> {
    const target = nameOrPath !== undefined ? projectFilePath(nameOrPath) : this.current;
    if (!target) throw Object.assign(new Error('this session is not a project yet: give it a name to save it as'), { field: 'path' });
    await writeProject(target, await this.snapshot(projectDataFolder(target)));
    this.current = target;
    await remember(target);
    return { path: target };
  }

  async open(nameOrPath: string): Promise<ProjectOpened> {
    const file = projectFilePath(nameOrPath);
    const opened = await this.restore(await readProject(file));
    this.current = file;
    await remember(file);
    return { path: file, ...opened };
  }

  /** The last session, if one was kept (at start-up); nothing when there is none. */
  async openLastSession(): Promise<ProjectOpened | undefined> {
    const file = lastSessionFile();
    if (!(await exists(file))) return undefined;
    return { path: file, ...(await this.restore(await readProject(file))) };
  }

  /** Writes the last session now (the server's close); failures are logged, never thrown. */
  async keepLastSession(): Promise<void> {
    clearTimeout(this.lastSessionTimer);
    this.lastSessionTimer = undefined;
    if (!this.wiring.keepLastSession || this.wiring.datasets.entries().length === 0) return;
    const file = lastSessionFile();
    try {
      await writeProject(file, await this.snapshot(projectDataFolder(file)));
    } catch (error) {
      this.wiring.logger.error(`keeping the last session in ${file}`, error);
    }
  }

  close(): void {
    this.stopFollowing();
    clearTimeout(this.lastSessionTimer);
  }

  private scheduleLastSession(): void {
    clearTimeout(this.lastSessionTimer);
    this.lastSessionTimer = setTimeout(() => void this.keepLastSession(), lastSessionDelayMs);
    this.lastSessionTimer.unref();
  }

  // ---- the session as a project and back ----

  private async snapshot(dataFolder: string): Promise<Project> {
    const { datasets, models, runs, workspace } = this.wiring;
    const used = new Set<string>();
    const entries = [];
    for (const record of datasets.entries()) entries.push({ id: record.info.id, name: record.info.name, source: await keptSource(record, dataFolder, used) });
    const finished = runs.list().flatMap(({ outcome }) => (outcome?.savedRunId ? [{ savedRunId: outcome.savedRunId, name: modelName(models, outcome.modelId) ?? outcome.runId }] : []));
    const opened = models.savedRuns().filter((run) => !finished.some((entry) => entry.savedRunId === run.savedRunId));
    return { format: projectFormat, version: 1, savedAt: new Date().toISOString(), datasets: entries, workspace: workspace.get().state, runs: [...finished, ...opened] };
  }

  private async restore(project: Project): Promise<Omit<ProjectOpened, 'path'>> {
    const notes: string[] = [];
    const ids = new Map<string, string>();
    const datasets: DatasetInfo[] = [];
    for (const entry of project.datasets) {
      try {
        const info = await this.wiring.datasets.reopen(entry.source as DataSource, entry.name);
        ids.set(entry.id, info.id);
        datasets.push(info);
      } catch (error) {
        notes.push(`${entry.name} was not opened: ${(error as Error).message}`);
      }
    }
    let models = 0;
    for (const run of project.runs) {
      try {
        await this.wiring.savedRuns.open(run.savedRunId);
        models += 1;
      } catch (error) {
        notes.push(`the model of run ${run.savedRunId} was not opened: ${(error as Error).message}`);
      }
    }
    this.wiring.workspace.update(withDatasetIds(project.workspace, ids), 'project');
    return { datasets, models, notes };
  }
}

function modelName(models: ModelRegistry, modelId: string | undefined): string | undefined {
  try {
    return modelId ? models.get(modelId).name : undefined;
  } catch {
    return undefined; // a model the user closed: the run is still named by its id
  }
}

/** The dataset's source with uploads copied into the project's data folder (uploads die with the session). */
async function keptSource(record: DatasetRecord, dataFolder: string, used: Set<string>): Promise<ProjectDataSource> {
  if (record.uploadedFiles.length === 0) return record.source as ProjectDataSource;
  await fsp.mkdir(dataFolder, { recursive: true });
  const copies = new Map<string, string>();
  for (const [index, upload] of record.uploadedFiles.entries()) {
    // the images file (or the CSV) under the name the user knows; a labels file under its upload's name
    const copy = path.join(dataFolder, freeName(index === 0 ? record.info.name : path.basename(upload), used));
    // an upload never changes: a copy of its size from an earlier save is that copy (the last session saves often)
    if ((await fsp.stat(upload)).isDirectory()) {
      // an uploaded image folder: copied whole once (it never changes either)
      if (!(await exists(copy))) await fsp.cp(upload, copy, { recursive: true });
    } else if (!(await sameSize(upload, copy))) await fsp.copyFile(upload, copy);
    copies.set(upload, copy);
  }
  const moved = (file: string) => copies.get(file) ?? file;
  const source = record.source as ProjectDataSource;
  if (source.kind === 'csv' || source.kind === 'folder') return { ...source, path: moved(source.path) };
  if (source.kind === 'idx') {
    const test = source.test && { imagesPath: moved(source.test.imagesPath), ...(source.test.labelsPath ? { labelsPath: moved(source.test.labelsPath) } : {}) };
    return { ...source, imagesPath: moved(source.imagesPath), ...(source.labelsPath ? { labelsPath: moved(source.labelsPath) } : {}), ...(test ? { test } : {}) };
  }
  return source;
}

/** A file name safe on every platform and not yet used in this save ("a.csv", then "a-2.csv"). */
function freeName(name: string, used: Set<string>): string {
  const safe = name.replace(/[^\w. ()-]+/g, '_').replace(/^\.+/, '') || 'data';
  const { name: stem, ext } = path.parse(safe);
  let candidate = safe;
  for (let n = 2; used.has(candidate.toLowerCase()); n += 1) candidate = `${stem}-${n}${ext}`;
  used.add(candidate.toLowerCase());
  return candidate;
}

/** The workspace with the project's dataset ids replaced by this session's (choices of datasets not opened are dropped). */
function withDatasetIds(saved: Workspace, ids: Map<string, string>): Workspace {
  const keyed = <T>(record: Record<string, T> | undefined): Record<string, T> =>
    Object.fromEntries(Object.entries(record ?? {}).flatMap(([id, value]) => (ids.has(id) ? [[ids.get(id)!, value]] : [])));
  const datasetId = saved.datasetId !== undefined ? ids.get(saved.datasetId) : undefined;
  // runs and evaluations belong to the session that made them: the project keeps their models instead
  const { watchedRunId: _run, shownEvaluation: _evaluation, datasetId: _dataset, ...rest } = saved;
  return {
    ...rest,
    ...(datasetId ? { datasetId } : {}),
    ...(saved.split ? { split: { ...saved.split, normalization: keyed(saved.split.normalization) } } : {}),
    ...(saved.imputation ? { imputation: keyed(saved.imputation) } : {}),
  };
}

// ---- recent projects (a small JSON list in the data folder) ----

function recentFile(): string {
  return path.join(dataDirectory(), 'recent-projects.json');
}

async function readRecent(): Promise<string[]> {
  try {
    const list: unknown = JSON.parse(await fsp.readFile(recentFile(), 'utf8'));
    return Array.isArray(list) ? list.filter((entry): entry is string => typeof entry === 'string').slice(0, maxRecent) : [];
  } catch {
    return []; // none yet, or unreadable: the list starts again
  }
}

async function remember(file: string): Promise<void> {
  const recent = [file, ...(await readRecent()).filter((entry) => entry !== file)].slice(0, maxRecent);
  await fsp.mkdir(path.dirname(recentFile()), { recursive: true });
  await writeFileAtomic(recentFile(), `${JSON.stringify(recent, null, 2)}\n`);
}

async function sameSize(a: string, b: string): Promise<boolean> {
  const [left, right] = await Promise.all([fsp.stat(a), fsp.stat(b).catch(() => undefined)]);
  return right !== undefined && left.size === right.size;
}

async function exists(file: string): Promise<boolean> {
  return fsp.access(file).then(() => true, () => false);
}
