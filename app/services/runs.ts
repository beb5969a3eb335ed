// Run history on disk: one JSON file per finished training run (app/core/runs/runFile.ts) and its model file
// beside it, in the user's data folder. The CLI's `train`, `serve` and the desktop window record runs here;
// `nnstudio runs` and the Models screen list, show, compare, open and delete them.
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { writeFileAtomic } from '../core/files/atomic';
import {
  decodeRun,
  encodeRun,
  newRunId,
  RunFileError,
  runIdPattern,
  runStatuses,
  summarizeRun,
  type RunData,
  type RunRecord,
  type RunStatus,
  type RunSummary,
} from '../core/runs/runFile';
import type { DataSource } from './dataSources';
import { loadModelFile, saveModelFile, type TrainedModel } from './models';
import type { TrainOutcome, TrainRequest } from './training';

// ---- where ----

/** Environment variable naming the data folder (runs go to its `runs/`); the tests point it at a temp folder. */
export const dataDirEnv = 'NNSTUDIO_DATA_DIR';

let configuredDataDirectory: string | undefined;

/**
 * The seam for a host with its own idea of the data folder (Electron's app.getPath('userData')). Not used by
 * default: the desktop app and the CLI share the platform folder, so `nnstudio runs` lists the app's runs.
 * `undefined` restores the default. NNSTUDIO_DATA_DIR still wins.
 */
export function setDataDirectory(directory: string | undefined): void {
  configuredDataDirectory = directory;
}

/** The platform's per-user data folder for NN Studio (XDG on Linux, Application Support, %APPDATA%). */
export function platformDataDirectory(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
  home: string = os.homedir(),
): string {
  if (platform === 'win32') return path.win32.join(env.APPDATA || path.win32.join(home, 'AppData', 'Roaming'), 'NN Studio');
  if (platform === 'darwin') return path.posix.join(home, 'Library', 'Application Support', 'NN Studio');
  // XDG: a relative XDG_DATA_HOME is invalid and must be ignored.
  const xdg = env.XDG_DATA_HOME && path.posix.isAbsolute(env.XDG_DATA_HOME) ? env.XDG_DATA_HOME : path.posix.join(home, '.local', 'share');
  return path.posix.join(xdg, 'nnstudio');
}

/** NNSTUDIO_DATA_DIR, else the host's folder (setDataDirectory), else the platform's. */
export function dataDirectory(env: NodeJS.ProcessEnv = process.env): string {
  const override = env[dataDirEnv];
  if (override) return path.resolve(override);
  return configuredDataDirectory ?? platformDataDirectory(env);
}

export function runsDirectory(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(dataDirectory(env), 'runs');
}

// ---- the store ----

/** A file in the runs folder that could not be read: listed by name, never fatal. */
export interface RunProblem {
  file: string;
  message: string;
}

export interface RunListing {
  /** Newest first. */
  runs: RunSummary[];
  problems: RunProblem[];
}

export class RunNotFoundError extends Error {
  readonly code = 'ERR_NNSTUDIO_RUN_NOT_FOUND';
  constructor(readonly runId: string, directory: string) {
    super(`no saved run "${runId}" in ${directory} (nnstudio runs lists them)`);
    this.name = 'RunNotFoundError';
  }
}

const runFileSuffix = '.json';
const isRunFileName = (name: string) => name.endsWith(runFileSuffix) && runIdPattern.test(name.slice(0, -runFileSuffix.length));

function checkRunId(runId: string): void {
  if (!runIdPattern.test(runId)) throw new Error(`"${runId}" is not a run id (letters, digits, "-" and "_")`);
}

export class RunStore {
  /** `directory` defaults to runsDirectory() at each call, so NNSTUDIO_DATA_DIR set later still counts. */
  constructor(private readonly fixedDirectory?: string) {}

  get directory(): string {
    return this.fixedDirectory ?? runsDirectory();
  }

  private runFile(runId: string): string {
    return path.join(this.directory, `${runId}${runFileSuffix}`);
  }

  /** The absolute path of a run's model file, or undefined when it kept none. */
  modelPath(record: RunRecord): string | undefined {
    return record.modelFile === null ? undefined : path.join(this.directory, record.modelFile);
  }

  /** The run files' names; a folder not made yet (no run recorded) holds none, any other failure is thrown. */
  private async runFileNames(): Promise<string[]> {
    try {
      return (await fsp.readdir(this.directory)).filter(isRunFileName).sort();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
  }

  /** Every readable run, newest first, and every unreadable file with the reason. A missing folder lists nothing. */
  async list(): Promise<RunListing> {
    const names = await this.runFileNames();
    const runs: RunSummary[] = [];
    const problems: RunProblem[] = [];
    for (const name of names) {
      try {
        runs.push(summarizeRun(await this.read(path.join(this.directory, name))));
      } catch (error) {
        problems.push({ file: name, message: error instanceof RunFileError ? error.message : `${name}: ${(error as Error).message}` });
      }
    }
    runs.sort((a, b) => (a.createdAt === b.createdAt ? b.id.localeCompare(a.id) : b.createdAt.localeCompare(a.createdAt)));
    return { runs, problems };
  }

  private async read(file: string): Promise<RunRecord> {
    return decodeRun(await fsp.readFile(file, 'utf8'), path.basename(file));
  }

  /**
   * The id a user typed: an exact id, or the start of exactly one (ids begin with the date, so "20250314-0930"
   * is usually enough).
   */
  async resolveId(idOrPrefix: string): Promise<string> {
    checkRunId(idOrPrefix);
    const ids = (await this.runFileNames()).map((name) => name.slice(0, -runFileSuffix.length));
    if (ids.includes(idOrPrefix)) return idOrPrefix;
    const matches = ids.filter((id) => id.startsWith(idOrPrefix));
    if (matches.length === 1) return matches[0];
    if (matches.length > 1) throw new Error(`"${idOrPrefix}" matches ${matches.length} runs (${matches.slice(0, 4).join(', ')}${matches.length > 4 ? ', …' : ''}): give more of the id`);
    throw new RunNotFoundError(idOrPrefix, this.directory);
  }

  async get(idOrPrefix: string): Promise<RunRecord> {
    return this.read(this.runFile(await this.resolveId(idOrPrefix)));
  }

  /** The run's model, loaded and validated like any model file. */
  async loadModel(record: RunRecord): Promise<TrainedModel> {
    const file = this.modelPath(record);
    if (!file) throw new Error(`run ${record.id} kept no model file`);
    const present = await fsp.access(file).then(
      () => true,
      (error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return false; // said below in the run's words
        throw error;
      },
    );
    if (!present) throw new Error(`run ${record.id}: its model file ${file} is missing`);
    return loadModelFile(file);
  }

  /** Writes the model file (when given) and then the run file, each atomically: a listed run always has its model. */
  async save(record: RunRecord, model?: TrainedModel): Promise<RunRecord> {
    checkRunId(record.id);
    await fsp.mkdir(this.directory, { recursive: true });
    const saved: RunRecord = { ...record, modelFile: model ? `${record.id}.safetensors` : null };
    const text = encodeRun(saved);
    if (model) await saveModelFile(path.join(this.directory, saved.modelFile!), model);
    await writeFileAtomic(this.runFile(record.id), text);
    return saved;
  }

  /** Removes the run file and its model file; returns the id removed. */
  async delete(idOrPrefix: string): Promise<string> {
    const runId = await this.resolveId(idOrPrefix);
    const file = this.runFile(runId);
    // A corrupt run file can still be deleted; its model file is the usual "<id>.safetensors".
    let modelFile = `${runId}.safetensors`;
    try {
      modelFile = (await this.read(file)).modelFile ?? modelFile;
    } catch {
      // unreadable: remove what the name says
    }
    await fsp.rm(file);
    await fsp.rm(path.join(this.directory, modelFile), { force: true });
    return runId;
  }
}

/** The store every face uses unless told otherwise (the user's data folder, or NNSTUDIO_DATA_DIR). */
export const defaultRunStore = new RunStore();

// ---- recording a run ----

/** What the face knows beyond the outcome: when it started, and a name for data the path does not describe well (an upload). */
export interface RunContext {
  startedAt: Date;
  request: TrainRequest;
  /** Short and long names of the data, when the source's own would mislead (an uploaded file's temporary path). */
  dataName?: string;
  dataDescription?: string;
  testDataDescription?: string;
}

/** How a face names a run's data in the run history (an upload's name rather than its temporary path). */
export type RunNaming = Omit<RunContext, 'startedAt' | 'request'>;

/** The engine's status as a run file's: 'early_stopped' / 'earlyStopped' / 'early-stopped' are one status. */
export function runStatusOf(status: string): RunStatus {
  const normal = status.replace(/([a-z])([A-Z])/g, '$1-$2').replace(/_/g, '-').toLowerCase();
  const known = runStatuses.find((name) => name === normal);
  if (!known) throw new Error(`unknown run status "${status}"`);
  return known;
}

function dataName(source: DataSource): string {
  switch (source.kind) {
    case 'mnist':
      return `MNIST ${source.split}${source.limit ? ` (${source.limit})` : ''}`;
    case 'idx':
      return path.basename(source.imagesPath) + (source.limit ? ` (${source.limit})` : '');
    case 'csv':
      return path.basename(source.path) + (source.options?.limit ? ` (${source.options.limit})` : '');
    case 'folder':
      return `${path.basename(source.path)}${/\.zip$/i.test(source.path) ? '' : '/'}` + (source.limit ? ` (${source.limit})` : '');
  }
}

function localTime(date: Date): string {
  const pad = (value: number) => String(value).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

const finiteOrNull = (value: number | undefined) => (value !== undefined && Number.isFinite(value) ? value : null);

/** The run file's record of a finished run (modelFile is set by RunStore.save). */
export function runRecordFrom(outcome: TrainOutcome, context: RunContext, finishedAt = new Date(), id?: string): RunRecord {
  const { plan, model } = outcome;
  const training = model.training;
  const options = (training?.options ?? {}) as Record<string, unknown>;
  const { data: _dataDescription, status: _status, threads: _threads, ...kept } = options;
  const request = context.request;
  const runId = id ?? newRunId(context.startedAt, randomBytes(4).toString('hex'));
  const testDescription = context.testDataDescription ?? (request.testData ? dataName(request.testData) : undefined);
  const data: RunData = {
    name: context.dataName ?? dataName(request.data),
    description: context.dataDescription ?? plan.dataDescription,
    ...(testDescription ? { testDescription } : {}),
    kind: plan.spec.input.length === 3 ? 'images' : 'table',
    inputShape: [...model.inputShape],
    classLabels: [...plan.classLabels],
    trainCount: plan.trainCount,
    validationCount: plan.validationCount,
    testCount: plan.testCount,
  };
  return {
    formatVersion: 1,
    id: runId,
    name: `${data.name}, ${localTime(context.startedAt)}`,
    createdAt: context.startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    status: runStatusOf(outcome.status),
    message: outcome.message,
    spec: plan.spec,
    options: {
      ...kept,
      epochs: plan.epochs,
      batchSize: plan.batchSize,
      optimizer: plan.spec.optimizer.kind,
      lr: plan.spec.optimizer.lr,
      seed: typeof options.seed === 'number' ? options.seed : (request.seed ?? 0),
      device: plan.device,
      deviceName: training?.device ?? plan.device,
      normalize: String(options.normalize ?? request.normalize ?? 'none'),
      valSplit: typeof options.valSplit === 'number' ? options.valSplit : 0,
      testSplit: typeof options.testSplit === 'number' ? options.testSplit : 0,
      ...(request.model.preset ? { preset: request.model.preset } : {}),
    },
    data,
    history: training?.history ?? [],
    seconds: training?.seconds ?? 0,
    test: outcome.test
      ? { loss: finiteOrNull(outcome.test.loss), report: outcome.test.report, ...(outcome.test.regression ? { regression: outcome.test.regression } : {}) }
      : null,
    modelFile: null,
  };
}

/** Records a finished run with its model in `store`; the callers (train, the API session) decide whether to. */
export async function recordRun(outcome: TrainOutcome, context: RunContext, store: RunStore = defaultRunStore): Promise<RunRecord> {
  return store.save(runRecordFrom(outcome, context), outcome.model);
}
