// The one API of DESIGN §5: every face (CLI, `serve`, the Electron window) calls these and nothing else.
import { listPresets } from '../core/model/presets';
import * as engine from '../engine';
import { benchPresets, loadBenchData, runBenchmark } from './bench';
import { dataSourceFromArgument, describeDataSource, loadDataSource } from './dataSources';
import { previewDataset, summarizeDataset } from './datasetViews';
import { evaluateModel, predictRows, predictWithModel } from './evaluation';
import { cellExamples } from './examples';
import { encodeModelFile, formatLayerTable, layerTable, loadModelFile, saveModelFile } from './models';
import { buildModelSpec, checkModelChoice } from './modelSpecs';
import { planSplit, trainModel, TrainingControl } from './training';

export const services = {
  datasets: {
    fromArgument: dataSourceFromArgument,
    describe: describeDataSource,
    load: loadDataSource,
    summarize: summarizeDataset,
    preview: previewDataset,
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
  },
  training: { train: trainModel, control: () => new TrainingControl(), planSplit },
  evaluation: { evaluate: evaluateModel, predict: predictWithModel, predictRows, cellExamples },
  devices: { list: engine.listDevices, resolve: engine.resolveDevice },
  bench: { presets: benchPresets, loadData: loadBenchData, run: runBenchmark },
} as const;

export type Services = typeof services;
export type { DataSource } from './dataSources';
export type { ResumeRequest, SplitPlan, TrainEvent, TrainingControl, TrainOutcome, TrainPlan, TrainRequest } from './training';
export type { DatasetPreview, DatasetSummary, ImagePreview } from './datasetViews';
export type { LayerCheck, ModelCheck, ModelChoice } from './modelSpecs';
export type { Evaluation, Prediction, RowPrediction } from './evaluation';
export type { CellExamples, CellQuery, PredictionSet } from './examples';
export type { TrainedModel } from './models';
