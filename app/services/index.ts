// The one API of DESIGN §5: every face (CLI, `serve`, the Electron window) calls these and nothing else.
import { listPresets } from '../core/model/presets';
import type { RunRecord } from '../core/runs/runFile';
import * as engine from '../engine';
import { benchPresets, loadBenchData, runBenchmark } from './bench';
import { dataSourceFromArgument, describeDataSource, loadDataSource } from './dataSources';
import { previewDataset, summarizeDataset } from './datasetViews';
import { imageForModel, loadImageFolder } from './imageFolders';
import { evaluateModel, predictRows, predictWithModel, ttaFor } from './evaluation';
import { formatInspection, inspectData } from './inspect';
import { formatFolderInspection, inspectFolder } from './inspectFolder';
import { predictionsCsv, predictionTable, tableCsv } from './predictionCsv';
import { cellExamples } from './examples';
import {
  encodeModelAs, encodeModelFile, exportCourseModel, exportOnnx, formatLayerTable, importCourseModel, layerTable, loadModelFile,
  parseCourseModelText, saveModelAs, saveModelFile,
} from './models';
import { buildModelSpec, checkModelChoice } from './modelSpecs';
import { defaultRunStore } from './runs';
import { planSplit, settle, trainModel, TrainingControl } from './training';
import { runSearch } from './search';
import { runGpus } from './trainingSetup';

export const services = {
  datasets: {
    fromArgument: dataSourceFromArgument,
    describe: describeDataSource,
    load: loadDataSource,
    summarize: summarizeDataset,
    preview: previewDataset,
    /** An image folder read directly (app/services/imageFolders.ts); one image decoded for a model. */
    loadImageFolder,
    imageForModel,
    /** The column report and inferred task of a CSV (issue 13). */
    inspect: inspectData,
    formatInspection,
    inspectFolder,
    formatFolderInspection,
  },
  models: {
    build: buildModelSpec,
    check: checkModelChoice,
    presets: listPresets,
    layerTable,
    formatLayerTable,
    load: loadModelFile,
    save: saveModelFile,
    encode: encodeModelFile,
    exportOnnx,
    exportCourseModel,
    encodeAs: encodeModelAs,
    saveAs: saveModelAs,
    importCourseModel,
    parseCourseModel: parseCourseModelText,
  },
  training: { train: trainModel, settle, control: () => new TrainingControl(), planSplit, gpus: runGpus },
  search: { run: runSearch },
  /** Run history in the user's data folder (NNSTUDIO_DATA_DIR overrides it). */
  runs: {
    directory: () => defaultRunStore.directory,
    list: () => defaultRunStore.list(),
    get: (idOrPrefix: string) => defaultRunStore.get(idOrPrefix),
    delete: (idOrPrefix: string) => defaultRunStore.delete(idOrPrefix),
    loadModel: (idOrPrefix: string) => defaultRunStore.get(idOrPrefix).then((record) => defaultRunStore.loadModel(record)),
    modelPath: (record: RunRecord) => defaultRunStore.modelPath(record),
    /** The store itself, for a run that records itself (TrainingHooks.history). */
    store: () => defaultRunStore,
  },
  evaluation: {
    evaluate: evaluateModel, predict: predictWithModel, predictRows, cellExamples, ttaFor,
    /** A file's predictions as a table and as the CSV `nnstudio predict` writes (models:predictFile too). */
    predictionTable, predictionsCsv, tableCsv,
  },
  devices: { list: engine.listDevices, resolve: engine.resolveDevice },
  bench: { presets: benchPresets, loadData: loadBenchData, run: runBenchmark },
} as const;

export type Services = typeof services;
export type { DataSource } from './dataSources';
export type { ResumeRequest, SavedRunResult, SplitPlan, TrainEvent, TrainingControl, TrainingEnding, TrainingHooks, TrainOutcome, TrainPlan, TrainRequest } from './training';
export type { DatasetPreview, DatasetSummary, ImagePreview } from './datasetViews';
export type { LayerCheck, ModelCheck, ModelChoice } from './modelSpecs';
export type { Evaluation, Prediction, RowPrediction } from './evaluation';
export type { DataInspection } from './inspect';
export type { PredictionTable } from './predictionCsv';
export type { CellExamples, CellQuery, PredictionSet } from './examples';
export type { ExportFormat, TrainedModel } from './models';
export { RunStore, type RunContext, type RunListing, type RunNaming, type RunProblem } from './runs';
export type { RunRecord, RunStatus, RunSummary } from '../core/runs/runFile';
