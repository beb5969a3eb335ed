// The UI API as one TypeScript type: channel -> payload and result, the events, the error value.
// A renderer imports this file alone (`import type`): it has no runtime code and no Node types, and
// everything in it is plain JSON (NaN and Infinity arrive as null over the WebSocket).
import type { ClassificationReport } from '../core/metrics/classification';
import type { DatasetPreview, DatasetSummary } from '../core/data/datasetViews';
import type { LayerCheck, ModelCheck } from '../core/model/modelCheck';
import type { DeviceInfo, EpochProgress, EpochRecord, SplitPlan, StepProgress, TrainingRecord, TrainPlan } from '../core/model/trainingTypes';
import type { ModelSpec } from '../core/model/spec';
import type { Augmentation, EarlyStopping, LrSchedule } from '../core/model/trainingControl';
import type { CellExample, CellExamples } from '../services/examples';
import type { RunRecord, RunSummary } from '../core/runs/runFile';
import type { Channel, PayloadOf } from './schemas';
import type { Workspace } from './workspace';

export type { Workspace } from './workspace';

export type { Channel, PayloadOf } from './schemas';
export type { ClassificationReport } from '../core/metrics/classification';
export type { Histogram, RegressionReport, WorstPrediction } from '../core/metrics/regression';
import type { Histogram, RegressionReport, WorstPrediction } from '../core/metrics/regression';
export type { ModelSpec } from '../core/model/spec';
export type { RunRecord, RunStatus as SavedRunStatus, RunSummary } from '../core/runs/runFile';
export type { Augmentation, EarlyStopping, EarlyStoppingMonitor, LrSchedule } from '../core/model/trainingControl';
// Defined once below the API (types only, nothing of Node), shared with the services and the engine.
export type { DatasetPreview, ImagePreview } from '../core/data/datasetViews';
export type { DeviceInfo, EpochProgress, EpochRecord, SplitPlan, StepProgress, TrainingRecord, TrainPlan } from '../core/model/trainingTypes';

// ---- errors ----

/** Every failure is a value: a bad channel or payload, a service's error, an unexpected exception. */
export interface ApiError {
  message: string;
  /** The payload field at fault ("source.path"), for validation errors. */
  field?: string;
  /** The engine's code where it gave one (ERR_NNSTUDIO_SPEC, ERR_NNSTUDIO_ENGINE, ...). */
  code?: string;
  /** Where in a data file, for errors about its contents: the 1-based line (header included) ... */
  row?: number;
  /** ... and the 1-based column, as a spreadsheet counts them. */
  column?: number;
}

export type ApiResponse<Result> = { result: Result; error?: undefined } | { error: ApiError; result?: undefined };

// ---- results ----

/** An open dataset: its summary under the session's id. */
export interface DatasetInfo extends DatasetSummary {
  id: string;
  /** The file name, or "MNIST (train)". */
  name: string;
  /** Where it came from, as the CLI would print it. */
  description: string;
  /** An IDX pair's own test pair (its separate test set): the images file's name and the images in it. */
  testPair?: { name: string; count: number };
  /** The dataset's classes can be named (IDX, MNIST: datasets:setClassNames); a CSV's are its label values. */
  namesClasses?: true;
  /** A CSV table: how its dates were read; datasets:reopen reads it again with another task or dates choice. */
  csv?: { dates: 'parts' | 'ignore' };
}

export interface PresetInfo {
  /** The file name, which models:check's `preset` takes (seed000, mlp, ...). */
  name: string;
  /** What people call it ("Tiny CNN") and what it is, in one line. */
  title: string;
  summary: string;
  /** The CLI's name for it (`--preset tiny-cnn`). */
  cliName: string;
  /** The layers and recipe in short. */
  description: string;
  spec: ModelSpec;
  /** The recipe the editor's training settings adopt: the ResNets' augmentation too. */
  training: { batchSize: number; epochs: number; lrSchedule?: LrSchedule; augment?: Augmentation };
  gpuOnly?: boolean;
}

export type { LayerCheck, ModelCheck };

export interface ModelInfo {
  id: string;
  name: string;
  labels: string[];
  inputShape: number[];
  /** What the drawing pad offers for it: 'digit' (an MNIST-like digit model), 'input' (another one-channel image classifier). */
  drawing?: 'digit' | 'input';
  spec: ModelSpec;
  parameterCount: number;
  training?: TrainingRecord;
  metrics?: Record<string, unknown>;
  /** The saved run this model was opened from (runs:open). */
  savedRunId?: string;
}

/** A checkpoint of the run was written after this epoch (training:continue can start from it). */
export interface CheckpointProgress {
  type: 'checkpoint';
  epoch: number;
}

/** The payload of `training:progress`: the plan once, then the engine's step (<= 20/s), epoch and checkpoint events. */
export type TrainingProgress = { runId: string } & ({ type: 'plan'; plan: TrainPlan } | StepProgress | EpochProgress | CheckpointProgress);

/** 'failed': the run could not start or the engine failed; message says why. */
export type RunStatus = 'completed' | 'cancelled' | 'diverged' | 'failed';

/** The payload of `training:done`, also kept as the run's outcome. */
export interface TrainingDone {
  runId: string;
  status: RunStatus;
  /** Why the run stopped early or failed; empty when it completed. */
  message: string;
  /** The trained model, kept in the session (absent when the run failed before it trained). */
  modelId?: string;
  history: EpochRecord[];
  /** A regression run's test set: its metrics (`regression`) and what Evaluate draws of it (`details`). */
  test?: { loss: number; report: ClassificationReport; regression?: RegressionReport; details?: RegressionResult };
  plan?: TrainPlan;
  seconds?: number;
  /** The test set's evaluation kept in the session, for evaluation:examples (absent without a test set). */
  evaluationId?: string;
  /** The run as recorded in the run history (runs:get), unless the session records none ... */
  savedRunId?: string;
  /** ... or why recording it failed (the run itself is fine). */
  savedRunError?: string;
  /** Early stopping ended the run (status 'completed'; message says why). */
  stoppedEarly?: boolean;
  /** With early stopping: the best epoch (with restoreBest the model holds its weights). */
  bestEpoch?: number;
}

/** One trial of a search trained at one rung (services/search.ts TrialRun; a score that is not finite is null). */
export interface SearchTrialRun {
  trial: number;
  /** 0-based. */
  rung: number;
  epochs: number;
  /** Validation accuracy, or R² for a regression; null where the run diverged. */
  score: number | null;
  validationLoss: number | null;
  status: RunStatus;
  seconds: number;
  /** The training examples of each of its epochs (fewer on a share of the split). */
  trainExamples: number;
  /** The run in the run history. */
  savedRunId?: string;
  settings: { depth: number; width: number; lr: number; schedule: string; batchSize: number; weightDecay: number; augment: string };
}

export interface SearchPlan {
  kind: 'table' | 'image';
  /** Regression trials score R²; classification ones accuracy. */
  task: 'classification' | 'regression';
  rungs: { epochs: number; trials: number }[];
  /** The data as described to the user, and its examples before the splits. */
  data: string;
  examples: number;
  /** Trial runs in all (every rung). */
  total: number;
  /** Trials training at once. */
  parallel: number;
}

/** search:progress: the plan once, then each trial run as it ends. */
export type SearchProgress = { searchId: string } & ({ type: 'plan'; plan: SearchPlan } | { type: 'trial'; run: SearchTrialRun; done: number; total: number });

export interface SearchInfo {
  searchId: string;
  datasetId: string;
  /** 'starting': reading the data; 'stopping': cancelled, the running trials finishing. */
  state: 'starting' | 'running' | 'stopping' | 'finished';
  plan?: SearchPlan;
  /** Every trial run so far, in the order they ran. */
  runs: SearchTrialRun[];
  /** Each trial's best run, the best first (finished searches). */
  leaderboard?: SearchTrialRun[];
  best?: SearchTrialRun;
  /** The winner as a finished run: its model, test metrics and evaluation, as training:done gives them. */
  outcome?: TrainingDone;
  /** Stopped before every planned trial ran: the best so far is the outcome (none when no trial had ended). */
  cancelled?: boolean;
  /** Its time budget ended it before every planned trial ran. */
  outOfTime?: boolean;
  /** Why the search failed. */
  error?: string;
  seconds?: number;
}

export interface RunInfo {
  runId: string;
  datasetId: string;
  /** 'starting': loading data and building the model; 'finished': see outcome. */
  state: 'starting' | 'running' | 'paused' | 'cancelling' | 'finished';
  plan?: TrainPlan;
  lastStep?: StepProgress;
  epochs: EpochProgress[];
  outcome?: TrainingDone;
  /** The epochs of the last checkpoint the session keeps for this run (training:continue starts there). */
  checkpointEpoch?: number;
  /** training:continue made this run from that one. */
  continuedFrom?: string;
  /** The per-step training loss, thinned to a few hundred points (x in epochs): a reloaded page draws it again. */
  stepLoss?: { x: number; y: number }[];
}

/** A regression model's evaluation for the Evaluate screen, in the targets' original units. */
export interface RegressionResult {
  report: RegressionReport;
  targetNames: string[];
  /** Predicted against true values of the first target, for the scatter plot (an even sample of at most maxScatterPoints rows). */
  scatter: { truth: number; predicted: number; row: number }[];
  /** Residuals (predicted − true) of the first target. */
  residuals: Histogram;
  /** The rows with the largest absolute error in the first target, largest first, each with its feature values. */
  worst: (WorstPrediction & { features: number[] })[];
  /** Names of those feature values (after the model's column encoding, before normalisation). */
  featureNames: string[];
}

export interface EvaluationResult {
  /** Its per-example outputs stay in the session under this id (the last few evaluations), for evaluation:examples. */
  evaluationId: string;
  modelId: string;
  datasetId: string;
  count: number;
  loss: number;
  /** Classification metrics (empty for a regression model: see `regression`). */
  report: ClassificationReport;
  regression?: RegressionResult;
  /** Predicted class per example. */
  predictions: number[];
  /** The predicted class's probability per example (for "examples sorted by confidence"). */
  confidences: number[];
}

// ---- examples of a confusion cell, predictions ----

// One definition for the service and the renderer (a type-only import: nothing of Node reaches the page).
export type { CellExample, CellExamples };

export interface PredictionResult {
  /** A regression model's predicted values (rows, targets) in the original units; probabilities and predictions are empty. */
  values?: number[][];
  targetNames?: string[];
  /** (rows, classes): each row sums to 1. */
  probabilities: number[][];
  /** The most probable class per row. */
  predictions: number[];
  classLabels: string[];
  /** models:predict with an image: the image as the model saw it ([C,H,W], values 0-255 in CHW order). */
  input?: { shape: number[]; pixels: number[] };
}

/** models:predictFile: a whole file's predictions (`nnstudio predict`'s CSV) and its first rows. */
export interface PredictionFile {
  /** `<model>-predictions.csv`, for a browser to save. */
  fileName: string;
  csv: string;
  /** Rows predicted (the CSV's data rows). */
  rows: number;
  columns: string[];
  /** The first rows (at most 20), as the CSV has them. */
  preview: (string | number)[][];
}

// ---- run history ----

/** runs:list: the runs saved in `directory`, newest first, and the files there that could not be read. */
export interface SavedRunList {
  directory: string;
  runs: RunSummary[];
  problems: { file: string; message: string }[];
}

/** runs:get: the run file's record, and where its model file is (absent when it kept none). */
export interface SavedRun extends RunRecord {
  modelPath?: string;
}

// ---- channels ----

interface Results {
  'devices:list': DeviceInfo[];
  'datasets:open': DatasetInfo;
  'datasets:list': DatasetInfo[];
  'datasets:preview': DatasetPreview;
  'datasets:close': { closed: true };
  /** The dataset as read again, under a new id (the old one is closed; its files stay with the new one). */
  'datasets:reopen': DatasetInfo;
  'datasets:split': SplitPlan;
  'datasets:setClassNames': DatasetInfo;
  'models:presets': PresetInfo[];
  'models:check': ModelCheck;
  'models:list': ModelInfo[];
  'models:save': { path: string; bytes: number };
  /** The safetensors file models:save would write, as base64, with a suggested `<name>.safetensors`. */
  'models:download': { fileName: string; base64: string };
  /** The model as ONNX, as base64, with a suggested `<name>.onnx`. */
  'models:export': { fileName: string; base64: string };
  'models:import': ModelInfo;
  'training:start': { runId: string };
  'training:pause': RunInfo;
  'training:setLearningRate': RunInfo;
  'training:continue': { runId: string };
  'training:resume': RunInfo;
  'training:cancel': RunInfo;
  'training:status': RunInfo;
  /** Every run of the session, oldest first (a reloaded page or a new tab finds the one running). */
  'training:list': RunInfo[];
  'search:start': { searchId: string };
  'search:cancel': SearchInfo;
  'search:status': SearchInfo;
  /** Every search of the session, oldest first. */
  'search:list': SearchInfo[];
  'workspace:get': { revision: number; state: Workspace };
  'workspace:update': { revision: number };
  'projects:info': ProjectsInfo;
  'projects:save': { path: string };
  'projects:open': ProjectOpened;
  /** An evaluation kept by the session, as evaluation:evaluate answered it. */
  'evaluation:get': EvaluationResult;
  'evaluation:evaluate': EvaluationResult;
  'evaluation:examples': CellExamples;
  'models:predict': PredictionResult;
  'models:predictFile': PredictionFile;
  'runs:list': SavedRunList;
  'runs:get': SavedRun;
  'runs:delete': { deleted: string };
  /** The model of the run, added to the session's models (the same one when it is opened again). */
  'runs:open': ModelInfo;
}

/** The whole API: channel -> { payload, result }. */
export type ApiChannels = { [C in Channel]: { payload: PayloadOf<C>; result: Results[C] } };
export type ResultOf<C extends Channel> = Results[C];

// ---- events ----

/** projects:open: what the project brought back; what could not be opened is named in `notes`. */
export interface ProjectOpened {
  path: string;
  datasets: DatasetInfo[];
  /** Models opened from the project's runs. */
  models: number;
  notes: string[];
}

export interface ProjectsInfo {
  /** The project this session was opened from or saved as. */
  current?: string;
  /** Most recent first. */
  recent: string[];
  /** Where a project saved by name goes. */
  folder: string;
}

export interface WorkspaceChanged {
  revision: number;
  /** The tab that made the change (it ignores its own). */
  clientId: string;
  state: Workspace;
}

/** Another tab (or this one) opened, closed or renamed datasets or models: list them again. */
export interface SessionChanged {
  lists: ('datasets' | 'models')[];
}

export type ApiEvent =
  | { event: 'training:progress'; payload: TrainingProgress }
  | { event: 'training:done'; payload: TrainingDone }
  | { event: 'search:progress'; payload: SearchProgress }
  | { event: 'search:done'; payload: SearchInfo }
  | { event: 'workspace:changed'; payload: WorkspaceChanged }
  | { event: 'session:changed'; payload: SessionChanged };
export type ApiEventName = ApiEvent['event'];

/** What a face offers the renderer (`window.nnstudio` in Electron, a WebSocket client under `serve`). */
export interface NnStudioApi {
  invoke<C extends Channel>(channel: C, payload: PayloadOf<C>): Promise<ApiResponse<ResultOf<C>>>;
  /** Returns the function that unsubscribes. */
  onEvent(listener: (event: ApiEvent) => void): () => void;
}

// ---- the desktop extension (Electron only) ----

/** What a native open dialog is for: its title and file filters. */
export type OpenFilePurpose = 'dataset' | 'model';

export interface OpenFileRequest {
  purpose: OpenFilePurpose;
}

export interface ChosenFile {
  /** Absolute path; from now on path-based payloads may name it (datasets:open, models:import). */
  path: string;
  /** The file name, for display. */
  name: string;
  /** purpose 'dataset' only: the file's first 64 KiB as text, for the label column choice before opening. */
  head?: string;
  /** purpose 'dataset' only, instead of head: what the file is when it is not text ("an Excel workbook: save it as CSV"). */
  headProblem?: string;
}

/** What a native save dialog saves: a model file (.safetensors) or its ONNX export (.onnx). */
export type SaveFilePurpose = 'model' | 'onnx' | 'predictions';

export interface SaveFileRequest {
  purpose: SaveFilePurpose;
  /** Suggested file name; made safe and given the purpose's extension (.safetensors or .onnx). */
  defaultName: string;
}

/** Native file dialogs: `null` when the user cancelled. Paths reach the engine only through these. */
export interface NnStudioDialogs {
  openFile(request: OpenFileRequest): Promise<ApiResponse<ChosenFile | null>>;
  /** The chosen path may then be given to models:save. */
  saveFile(request: SaveFileRequest): Promise<ApiResponse<{ path: string } | null>>;
}

/** `window.nnstudio` in Electron: the API plus native dialogs (serve has no dialogs: uploads and downloads). */
export interface NnStudioDesktopApi extends NnStudioApi {
  dialogs: NnStudioDialogs;
}

// ---- the serve wire format ----

/** A client's message over the WebSocket; `id` is echoed in the reply. */
export interface ClientMessage<C extends Channel = Channel> {
  id: string | number;
  channel: C;
  payload?: PayloadOf<C>;
}

/** A reply (`id` null when the message was too broken to carry one), or an event pushed by the server. */
export type ServerMessage =
  | { id: string | number | null; result: unknown; error?: undefined }
  | { id: string | number | null; error: ApiError; result?: undefined }
  | ApiEvent;
