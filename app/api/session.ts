// The UI API's one implementation: validates a payload at the gate, calls the services and keeps the
// session's datasets, runs and models by id. Electron's main process and `serve` both wrap `dispatch`;
// neither holds logic of its own. Errors are returned as values, never thrown across the boundary.
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Dataset } from '../core/data/dataset';
import { DataError } from '../core/data/errors';
import { parameterCount } from '../core/model/shapes';
import { services } from '../services';
import type { DataSource } from '../services/dataSources';
import type { PredictionSet } from '../services/examples';
import { RunStoppedError, TrainingControl, type ResumeRequest, type TrainEvent, type TrainOutcome, type TrainRequest } from '../services/training';
import type { TrainedModel } from '../services/models';
import { defaultRunStore, recordRun, RunStore, type RunContext } from '../services/runs';
import { isChannel, payloadSchemas, type Channel, type ParsedPayloadOf } from './schemas';
import type {
  ApiError,
  ApiEvent,
  ApiResponse,
  DatasetInfo,
  EpochProgress,
  ModelInfo,
  ResultOf,
  RunInfo,
  StepProgress,
  TrainingDone,
  TrainPlan,
} from './types';

export interface ApiOptions {
  /** Where uploads are written (default: a new folder under the OS temp dir, removed by close()). */
  uploadDir?: string;
  /**
   * Where finished runs are recorded and runs:* read (default: the user's data folder, or NNSTUDIO_DATA_DIR);
   * false records nothing (runs:* still read the default store).
   */
  runHistory?: RunStore | false;
}

export interface Api {
  /** Validates `payload` for `channel` and runs it; resolves to `{ result }` or `{ error }`, never rejects. */
  dispatch(channel: string, payload: unknown): Promise<ApiResponse<unknown>>;
  /** Receives every event of the session; returns the function that unsubscribes. */
  subscribe(listener: (event: ApiEvent) => void): () => void;
  /** Cancels running trainings, waits for them (bounded) and removes uploaded files. */
  close(): Promise<void>;
}

// ---- session records ----

interface DatasetRecord {
  info: DatasetInfo;
  source: DataSource;
  dataset: Dataset;
  /** Uploaded files (a CSV, or IDX images and labels), deleted when the dataset is closed. */
  uploadedFiles: string[];
}

interface RunRecord {
  info: RunInfo;
  control: TrainingControl;
  /** Settles (never rejects) when the run is finished and training:done was sent. */
  finished: Promise<void>;
  /** Where the run writes its checkpoint every epoch (in the session's folder). */
  checkpointPath: string;
  /** The dataset's display name, for the model's name. */
  datasetName: string;
  /** How the run history names the run's data; a continued run reuses it. */
  history?: RunContext;
}

interface ModelRecord {
  name: string;
  model: TrainedModel;
  /** The saved run it was opened from. */
  savedRunId?: string;
}

/** An evaluation's per-example outputs, for evaluation:examples; only the last few are kept (MNIST's test set is 31 MB). */
interface EvaluationRecord {
  modelId: string;
  predictions: PredictionSet;
}

const keptEvaluations = 3;

type Handlers = { [C in Channel]: (payload: ParsedPayloadOf<C>) => Promise<ResultOf<C>> | ResultOf<C> };

/** A payload error naming the field: "datasets:open: source.path: expected string, received undefined". */
function validationError(channel: Channel, issues: readonly { path: readonly PropertyKey[]; message: string; code?: string; keys?: string[] }[]): ApiError {
  const issue = issues[0];
  const fieldPath = issue.path.map(String);
  if (issue.code === 'unrecognized_keys' && issue.keys?.length) fieldPath.push(issue.keys[0]);
  const field = fieldPath.length > 0 ? fieldPath.join('.') : undefined;
  return { message: `${channel}: ${field ? `${field}: ` : 'payload: '}${issue.message}`, field };
}

function errorValue(error: unknown): ApiError {
  if (error instanceof Error) {
    const { code, field } = error as { code?: unknown; field?: unknown };
    const value: ApiError = {
      message: error.message,
      ...(typeof code === 'string' ? { code } : {}),
      ...(typeof field === 'string' ? { field } : {}),
    };
    // A data file's row and column let a face point at the column at fault.
    if (error instanceof DataError) {
      if (error.row !== undefined) value.row = error.row;
      if (error.column !== undefined) value.column = error.column;
    }
    return value;
  }
  return { message: String(error) };
}

/** An upload's temporary path or name means nothing to the user: messages name the file as sent. */
function showUploadNames(error: unknown, uploads: readonly { file: string; name: string }[]): void {
  if (!(error instanceof Error)) return;
  for (const { file, name } of uploads) {
    error.message = error.message.split(file).join(name).split(path.basename(file)).join(name);
  }
}

/**
 * `<name>.safetensors` (or `<name><extension>`) from a model's name, safe as a file name on every system
 * ("iris.csv (run-1)" stays readable); a model file's own extension (.safetensors, .onnx, .m) is dropped.
 */
export function downloadFileName(name: string, extension = '.safetensors'): string {
  const base = name
    .replace(/\.(safetensors|onnx|m)$/i, '')
    .replace(/[\\/:*?"<>|\u0000-\u001f\u007f]/g, '_')
    .replace(/^[\s.]+|[\s.]+$/g, '')
    .slice(0, 200);
  return `${base || 'model'}${extension}`;
}

/** The file extension of each models:export format. */
export const exportExtensions = { onnx: '.onnx' } as const;

const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

export function createApi(options: ApiOptions = {}): Api {
  const datasets = new Map<string, DatasetRecord>();
  const runs = new Map<string, RunRecord>();
  const models = new Map<string, ModelRecord>();
  const evaluations = new Map<string, EvaluationRecord>();
  const listeners = new Set<(event: ApiEvent) => void>();
  const counters = new Map<string, number>();
  const runStore = options.runHistory || defaultRunStore;
  const recordsRuns = options.runHistory !== false;
  /** Saved run id -> the model runs:open made of it, so opening a run twice gives the same model. */
  const openedRuns = new Map<string, string>();
  let uploadDir: string | undefined = options.uploadDir;
  let ownsUploadDir = false;
  let closed = false;

  const nextId = (kind: 'dataset' | 'run' | 'model' | 'evaluation'): string => {
    const n = (counters.get(kind) ?? 0) + 1;
    counters.set(kind, n);
    return `${kind}-${n}`;
  };

  // A listener's failure must not reach the engine (a throwing progress callback cancels the run).
  const emit = (event: ApiEvent): void => {
    for (const listener of listeners) {
      try {
        listener(event);
      } catch {
        // the face's problem; the session goes on
      }
    }
  };

  const getDataset = (id: string): DatasetRecord => {
    const record = datasets.get(id);
    if (!record) throw new Error(`no dataset with id "${id}" (open one with datasets:open)`);
    return record;
  };
  const getRun = (id: string): RunRecord => {
    const record = runs.get(id);
    if (!record) throw new Error(`no training run with id "${id}"`);
    return record;
  };
  const getModel = (id: string): ModelRecord => {
    const record = models.get(id);
    if (!record) throw new Error(`no model with id "${id}" (train one or import one with models:import)`);
    return record;
  };

  /** Keeps an evaluation's outputs under a new id, forgetting the oldest beyond keptEvaluations. */
  const keepEvaluation = (record: EvaluationRecord): string => {
    const id = nextId('evaluation');
    evaluations.set(id, record);
    for (const old of evaluations.keys()) {
      if (evaluations.size <= keptEvaluations) break;
      evaluations.delete(old);
    }
    return id;
  };
  const getEvaluation = (id: string): EvaluationRecord => {
    const record = evaluations.get(id);
    if (!record) throw new Error(`no evaluation with id "${id}" (the session keeps the last ${keptEvaluations}; evaluate again)`);
    return record;
  };

  /** Writes uploaded bytes under the session's upload folder; the name keeps its extension for the loaders. */
  async function writeUpload(fileName: string, base64: string): Promise<string> {
    const folder = await sessionFolder();
    const safeName = path.basename(fileName).replace(/[^A-Za-z0-9._-]/g, '_');
    const file = path.join(folder, `${randomBytes(6).toString('hex')}-${safeName}`);
    await fs.promises.writeFile(file, Buffer.from(base64, 'base64'), { flag: 'wx' });
    return file;
  }

  const removeFile = (file: string | undefined) => (file ? fs.promises.rm(file, { force: true }) : Promise.resolve());
  const removeFiles = (files: readonly string[]) => Promise.all(files.map(removeFile));

  function modelInfo(id: string, record: ModelRecord): ModelInfo {
    const { model } = record;
    return {
      id,
      name: record.name,
      labels: [...model.labels],
      inputShape: [...model.inputShape],
      spec: model.spec,
      parameterCount: parameterCount(model.spec),
      training: model.training && {
        options: model.training.options,
        history: model.training.history,
        device: model.training.device,
        seconds: model.training.seconds,
      },
      metrics: model.metrics,
      ...(record.savedRunId ? { savedRunId: record.savedRunId } : {}),
    };
  }

  const runInfo = (record: RunRecord): RunInfo => ({ ...record.info, epochs: [...record.info.epochs] });

  // ---- training ----

  /** The session's own folder (uploads, checkpoints), made on first use and removed by close(). */
  async function sessionFolder(): Promise<string> {
    if (!uploadDir) {
      uploadDir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'nnstudio-uploads-'));
      ownsUploadDir = true;
    }
    await fs.promises.mkdir(uploadDir, { recursive: true });
    return uploadDir;
  }

  async function checkpointFile(runId: string): Promise<string> {
    const folder = path.join(await sessionFolder(), 'checkpoints');
    await fs.promises.mkdir(folder, { recursive: true });
    return path.join(folder, `${runId}.checkpoint.safetensors`);
  }

  async function startRun(payload: ParsedPayloadOf<'training:start'>): Promise<{ runId: string }> {
    const data = getDataset(payload.datasetId);
    const testData = payload.testDatasetId !== undefined ? getDataset(payload.testDatasetId) : undefined;
    const model = payload.model ?? {};
    // The model's errors are known now: answer them at once rather than in training:done.
    const check = services.models.check(model, data.dataset.featureShape, data.dataset.classLabels.length);
    if (!check.ok) throw new Error(check.error?.message ?? 'invalid model');
    if (payload.earlyStopping && payload.earlyStopping.monitor !== 'trainLoss' && payload.valSplit === 0) {
      throw new Error(`early stopping on ${payload.earlyStopping.monitor} needs a validation split above 0`);
    }

    const runId = nextId('run');
    const checkpointPath = await checkpointFile(runId);
    const request: TrainRequest = {
      data: data.source,
      testData: testData?.source,
      model,
      normalize: payload.normalize,
      epochs: payload.epochs,
      batchSize: payload.batchSize,
      valSplit: payload.valSplit,
      testSplit: payload.testSplit,
      seed: payload.seed,
      device: payload.device,
      threads: payload.threads,
      lrSchedule: payload.lrSchedule,
      earlyStopping: payload.earlyStopping,
      checkpointPath,
    };
    // An upload's path is a temporary file: the run history names it as the user does.
    const context: RunContext = {
      startedAt: new Date(),
      request,
      ...(data.uploadedFiles.length > 0 ? { dataName: data.info.name, dataDescription: data.info.description } : {}),
      ...(testData ? { testDataDescription: testData.info.description } : {}),
    };
    launchRun(runId, payload.datasetId, data.info.name, checkpointPath, request, { history: context });
    return { runId };
  }

  async function continueRun(payload: ParsedPayloadOf<'training:continue'>): Promise<{ runId: string }> {
    const previous = getRun(payload.runId);
    const { info } = previous;
    if (info.state !== 'finished') throw new Error(`training run ${payload.runId} is still going: pause or cancel it first`);
    if (info.checkpointEpoch === undefined) {
      throw new Error(`training run ${payload.runId} has no checkpoint to continue from (it ended before its first epoch did)`);
    }
    const runId = nextId('run');
    const checkpointPath = await checkpointFile(runId);
    const request: ResumeRequest = {
      resumeFrom: previous.checkpointPath,
      epochs: payload.epochs,
      device: payload.device,
      checkpointPath,
    };
    // The run history records it like the first run (the same data, named the same way), from now.
    const history = previous.history && { ...previous.history, startedAt: new Date() };
    launchRun(runId, info.datasetId, previous.datasetName, checkpointPath, request, { continuedFrom: payload.runId, history });
    return { runId };
  }

  function launchRun(
    runId: string,
    datasetId: string,
    datasetName: string,
    checkpointPath: string,
    request: TrainRequest | ResumeRequest,
    { continuedFrom, history }: { continuedFrom?: string; history?: RunContext } = {},
  ): void {
    const control = new TrainingControl();
    const info: RunInfo = { runId, datasetId, state: 'starting', epochs: [], ...(continuedFrom ? { continuedFrom } : {}) };
    const onEvent = (event: TrainEvent): void => {
      if (event.type === 'plan') {
        const { resumedFrom, ...plan } = event.plan;
        info.plan = { ...(plan as TrainPlan), ...(resumedFrom ? { resumedFrom: { epoch: resumedFrom.epoch } } : {}) };
        if (info.state === 'starting') info.state = control.paused ? 'paused' : 'running';
        emit({ event: 'training:progress', payload: { runId, type: 'plan', plan: info.plan } });
        return;
      }
      if (event.type === 'checkpoint') {
        // the file stays in the session: faces see the epoch only
        info.checkpointEpoch = event.epoch;
        emit({ event: 'training:progress', payload: { runId, type: 'checkpoint', epoch: event.epoch } });
        return;
      }
      if (event.type === 'step') info.lastStep = event as StepProgress;
      else info.epochs.push(event as EpochProgress);
      emit({ event: 'training:progress', payload: { runId, ...event } });
    };
    const finish = (done: TrainingDone): void => {
      info.state = 'finished';
      info.outcome = done;
      emit({ event: 'training:done', payload: done });
    };
    const record = async (outcome: TrainOutcome): Promise<Pick<TrainingDone, 'savedRunId' | 'savedRunError'>> => {
      if (!recordsRuns || !history) return {};
      try {
        return { savedRunId: (await recordRun(outcome, { ...history, request: outcome.request }, runStore)).id };
      } catch (error) {
        return { savedRunError: `the run was not recorded in the run history: ${errorValue(error).message}` };
      }
    };
    // `stopped`: a failure ended a run that had trained (a checkpoint not written): status failed, its model kept
    const succeeded = async (outcome: TrainOutcome, stopped?: Error): Promise<void> => {
      const saved = await record(outcome);
      const modelId = nextId('model');
      models.set(modelId, { name: `${datasetName} (${runId})`, model: outcome.model });
      const tested = outcome.testPredictions;
      const evaluationId = tested && keepEvaluation({
        modelId,
        predictions: { classLabels: outcome.model.labels, inputShape: outcome.model.inputShape, ...tested },
      });
      const { resumedFrom, ...plan } = outcome.plan;
      finish({
        runId,
        status: stopped ? 'failed' : outcome.status,
        message: stopped ? stopped.message : outcome.message,
        modelId,
        history: outcome.model.training?.history ?? [],
        test: outcome.test && { loss: outcome.test.loss, report: outcome.test.report },
        plan: { ...(plan as TrainPlan), ...(resumedFrom ? { resumedFrom: { epoch: resumedFrom.epoch } } : {}) },
        seconds: outcome.model.training?.seconds,
        ...(evaluationId ? { evaluationId } : {}),
        ...(outcome.stoppedEarly ? { stoppedEarly: true } : {}),
        ...(outcome.bestEpoch !== undefined ? { bestEpoch: outcome.bestEpoch } : {}),
        ...saved,
      });
    };
    const failed = (error: unknown): void => {
      finish({ runId, status: 'failed', message: errorValue(error).message, history: [], plan: info.plan });
    };
    const stoppedOrFailed = (error: unknown): Promise<void> | void =>
      error instanceof RunStoppedError ? succeeded(error.outcome, error) : failed(error);
    const finished = services.training
      .train(request, onEvent, undefined, control)
      .then((outcome) => succeeded(outcome), stoppedOrFailed)
      .catch(failed);
    runs.set(runId, { info, control, finished, checkpointPath, datasetName, ...(history ? { history } : {}) });
  }

  function setLearningRate(runId: string, lr: number): RunInfo {
    const record = getRun(runId);
    const { info, control } = record;
    // 'starting' (data loading) counts as running: the control applies the rate when the engine starts
    if (info.state !== 'running' && info.state !== 'paused' && info.state !== 'starting') {
      throw new Error(`training run ${runId} is ${info.state}: the learning rate can change only while it runs or is paused`);
    }
    control.setLearningRate(lr);
    return runInfo(record);
  }

  function controlRun(runId: string, action: 'pause' | 'resume' | 'cancel'): RunInfo {
    const record = getRun(runId);
    const { info, control } = record;
    if (info.state === 'finished') throw new Error(`training run ${runId} has already finished (${info.outcome?.status})`);
    if (action === 'pause') {
      control.pause();
      if (info.state === 'running') info.state = 'paused';
    } else if (action === 'resume') {
      control.resume();
      if (info.state === 'paused') info.state = 'running';
    } else {
      control.cancel();
      info.state = 'cancelling';
    }
    return runInfo(record);
  }

  // ---- handlers, one per channel ----

  const handlers: Handlers = {
    'devices:list': () => services.devices.list().map((device) => ({ ...device })),

    'datasets:open': async ({ source }) => {
      let dataSource: DataSource;
      let name: string;
      const uploads: { file: string; name: string }[] = [];
      try {
        if (source.kind === 'mnist') {
          const split = source.split ?? 'train';
          dataSource = { kind: 'mnist', split, limit: source.limit };
          name = `MNIST (${split})`;
        } else if (source.kind === 'path') {
          const file = path.resolve(source.path);
          const labelsPath = source.labelsPath && path.resolve(source.labelsPath);
          dataSource = await services.datasets.fromArgument(file, 'train', { labelsPath, csv: source.csv });
          name = path.basename(file);
        } else {
          name = source.fileName;
          uploads.push({ file: await writeUpload(source.fileName, source.base64), name });
          if (source.labels) uploads.push({ file: await writeUpload(source.labels.fileName, source.labels.base64), name: source.labels.fileName });
          dataSource = await services.datasets.fromArgument(uploads[0].file, 'train', { labelsPath: uploads[1]?.file, csv: source.csv });
          if (source.labels && dataSource.kind !== 'idx') {
            throw new Error(`${name} is not an IDX images file, so it takes no labels file (a CSV holds its labels in a column)`);
          }
        }
        const dataset = await services.datasets.load(dataSource);
        const id = nextId('dataset');
        const description = source.kind === 'upload' ? `${name} (uploaded)` : services.datasets.describe(dataSource);
        const info: DatasetInfo = { id, name, description, ...services.datasets.summarize(dataset) };
        datasets.set(id, { info, source: dataSource, dataset, uploadedFiles: uploads.map((upload) => upload.file) });
        return info;
      } catch (error) {
        await removeFiles(uploads.map((upload) => upload.file));
        showUploadNames(error, uploads);
        throw error;
      }
    },

    'datasets:list': () => [...datasets.values()].map((record) => record.info),

    'datasets:preview': ({ datasetId, rows }) => {
      const record = getDataset(datasetId);
      return services.datasets.preview(record.source, record.dataset, rows ?? 20);
    },

    'datasets:close': async ({ datasetId }) => {
      const record = getDataset(datasetId);
      datasets.delete(datasetId);
      const inUse = [...runs.values()].some((run) => run.info.state !== 'finished' && run.info.datasetId === datasetId);
      // A run still reading the file keeps it; close() removes the whole folder later.
      if (!inUse) await removeFiles(record.uploadedFiles);
      return { closed: true as const };
    },

    'datasets:split': ({ datasetId, testDatasetId, valSplit, testSplit }) => {
      const data = getDataset(datasetId);
      const test = testDatasetId !== undefined ? getDataset(testDatasetId) : undefined;
      return services.training.planSplit(data.dataset, data.source, {
        valSplit,
        testSplit,
        test: test && { source: test.source, count: test.dataset.count },
      });
    },

    'models:presets': () =>
      services.models.presets().map((preset) => ({
        name: preset.name,
        description: preset.description,
        spec: preset.spec,
        training: preset.training,
        gpuOnly: preset.gpuOnly,
      })),

    'models:check': ({ datasetId, inputShape, classCount, model }) => {
      const data = datasetId !== undefined ? getDataset(datasetId).dataset : undefined;
      const shape = data ? data.featureShape : (inputShape as number[]);
      const classes = data ? data.classLabels.length : (classCount as number);
      return services.models.check(model, shape, classes);
    },

    'models:list': () => [...models.entries()].map(([id, record]) => modelInfo(id, record)),

    'models:save': async ({ modelId, path: target, format }) => {
      const record = getModel(modelId);
      const file = path.resolve(target);
      await services.models.saveAs(file, record.model, format ?? 'safetensors');
      return { path: file, bytes: (await fs.promises.stat(file)).size };
    },

    'models:download': ({ modelId }) => {
      const record = getModel(modelId);
      const bytes = services.models.encode(record.model);
      return { fileName: downloadFileName(record.name), base64: bytes.toString('base64') };
    },

    'models:export': ({ modelId, format }) => {
      const record = getModel(modelId);
      const bytes = services.models.encodeAs(record.model, format);
      return { fileName: downloadFileName(record.name, exportExtensions[format]), base64: bytes.toString('base64') };
    },

    'models:import': async ({ source }) => {
      let model: TrainedModel;
      let name: string;
      if (source.kind === 'path') {
        model = await services.models.load(path.resolve(source.path));
        name = path.basename(source.path);
      } else {
        const file = await writeUpload(source.fileName, source.base64);
        try {
          model = await services.models.load(file);
        } catch (error) {
          showUploadNames(error, [{ file, name: source.fileName }]);
          throw error;
        } finally {
          await removeFile(file);
        }
        name = source.fileName;
      }
      const id = nextId('model');
      const record = { name, model };
      models.set(id, record);
      return modelInfo(id, record);
    },

    'training:start': (payload) => startRun(payload),
    'training:pause': ({ runId }) => controlRun(runId, 'pause'),
    'training:setLearningRate': ({ runId, lr }) => setLearningRate(runId, lr),
    'training:continue': (payload) => continueRun(payload),
    'training:resume': ({ runId }) => controlRun(runId, 'resume'),
    'training:cancel': ({ runId }) => controlRun(runId, 'cancel'),
    'training:status': ({ runId }) => runInfo(getRun(runId)),

    'evaluation:evaluate': async ({ modelId, datasetId, device }) => {
      const { model } = getModel(modelId);
      const data = getDataset(datasetId);
      const evaluation = await services.evaluation.evaluate(model, data.source, { device });
      const classes = model.labels.length;
      const confidences = Array.from(evaluation.predictions, (predicted, row) => evaluation.probabilities[row * classes + predicted]);
      const evaluationId = keepEvaluation({
        modelId,
        predictions: {
          classLabels: model.labels,
          inputShape: model.inputShape,
          data: evaluation.rawDataset,
          predictions: evaluation.predictions,
          probabilities: evaluation.probabilities,
        },
      });
      return {
        evaluationId,
        modelId,
        datasetId,
        count: evaluation.dataset.count,
        loss: evaluation.loss,
        report: evaluation.report,
        predictions: Array.from(evaluation.predictions),
        confidences,
      };
    },

    // ---- browsing an evaluation's examples, predicting rows ----

    'evaluation:examples': ({ evaluationId, ...query }) => services.evaluation.cellExamples(getEvaluation(evaluationId).predictions, query),

    'models:predict': async ({ modelId, inputs, device }) => {
      const { model } = getModel(modelId);
      const width = model.spec.input.reduce((a, b) => a * b, 1);
      const values = new Float32Array(inputs.length * width);
      inputs.forEach((row, index) => {
        if (row.length !== width) {
          const error = new Error(`models:predict: inputs.${index}: ${row.length} values, but the model takes ${width} (${model.spec.input.join('x')})`);
          throw Object.assign(error, { field: `inputs.${index}` });
        }
        values.set(row, index * width);
      });
      const predicted = await services.evaluation.predictRows(model, values, { device });
      const classes = model.labels.length;
      return {
        probabilities: inputs.map((_, row) => Array.from(predicted.probabilities.subarray(row * classes, (row + 1) * classes))),
        predictions: Array.from(predicted.predictions),
        classLabels: [...model.labels],
      };
    },

    // ---- run history ----

    'runs:list': async () => ({ directory: runStore.directory, ...(await runStore.list()) }),
    'runs:get': async ({ runId }) => {
      const record = await runStore.get(runId);
      const modelPath = runStore.modelPath(record);
      return { ...record, ...(modelPath ? { modelPath } : {}) };
    },
    'runs:delete': async ({ runId }) => ({ deleted: await runStore.delete(runId) }),
    'runs:open': ({ runId }) => openSavedRun(runId),
  };

  // ---- run history ----

  async function openSavedRun(savedRunId: string): Promise<ModelInfo> {
    const record = await runStore.get(savedRunId);
    const known = openedRuns.get(record.id);
    const existing = known && models.get(known);
    if (known && existing) return modelInfo(known, existing);
    const model = await runStore.loadModel(record);
    const id = nextId('model');
    // Two runs of one file started in the same second share a name; the comparison's pickers need two.
    const taken = [...models.values()].some((entry) => entry.name === record.name);
    const opened: ModelRecord = { name: taken ? `${record.name} (${record.id})` : record.name, model, savedRunId: record.id };
    models.set(id, opened);
    openedRuns.set(record.id, id);
    return modelInfo(id, opened);
  }

  // ---- the gate ----

  async function dispatch(channel: string, payload: unknown): Promise<ApiResponse<unknown>> {
    if (closed) return { error: { message: 'the session is closed' } };
    if (typeof channel !== 'string' || !isChannel(channel)) {
      return { error: { message: `unknown channel ${JSON.stringify(channel)}`, field: 'channel' } };
    }
    const parsed = payloadSchemas[channel].safeParse(payload);
    if (!parsed.success) return { error: validationError(channel, parsed.error.issues as never) };
    try {
      const handler = handlers[channel] as (payload: unknown) => Promise<unknown> | unknown;
      return { result: await handler(parsed.data) };
    } catch (error) {
      return { error: errorValue(error) };
    }
  }

  function subscribe(listener: (event: ApiEvent) => void): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  async function close(): Promise<void> {
    if (closed) return;
    closed = true;
    for (const run of runs.values()) run.control.cancel();
    // The engine stops within one step; a run still loading its data finishes that first.
    await Promise.race([Promise.all([...runs.values()].map((run) => run.finished)), wait(10_000)]);
    listeners.clear();
    if (ownsUploadDir && uploadDir) await fs.promises.rm(uploadDir, { recursive: true, force: true });
    else {
      await Promise.all([...datasets.values()].map((record) => removeFiles(record.uploadedFiles)));
      await Promise.all([...runs.values()].map((run) => removeFile(run.checkpointPath)));
    }
    datasets.clear();
    models.clear();
    evaluations.clear();
  }

  return { dispatch, subscribe, close };
}
