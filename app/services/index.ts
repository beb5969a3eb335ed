// The one API of DESIGN §5: every face (CLI, `serve`, the Electron window) calls these and nothing else.
import { listPresets } from '../core/model/presets';
import * as engine from '../engine';
import { benchPresets, loadBenchData, runBenchmark } from './bench';
import { dataSourceFromArgument, describeDataSource, loadDataSource } from './dataSources';
import { evaluateModel, predictWithModel } from './evaluation';
import { formatLayerTable, layerTable, loadModelFile, saveModelFile } from './models';
import { buildModelSpec } from './modelSpecs';
import { trainModel } from './training';

export const services = {
  datasets: { fromArgument: dataSourceFromArgument, describe: describeDataSource, load: loadDataSource },
  models: {
    build: buildModelSpec,
    presets: listPresets,
    layerTable,
    formatLayerTable,
    load: loadModelFile,
    save: saveModelFile,
  },
  training: { train: trainModel },
  evaluation: { evaluate: evaluateModel, predict: predictWithModel },
  devices: { list: engine.listDevices, resolve: engine.resolveDevice },
  bench: { presets: benchPresets, loadData: loadBenchData, run: runBenchmark },
} as const;

export type Services = typeof services;
export type { DataSource } from './dataSources';
export type { TrainEvent, TrainOutcome, TrainPlan, TrainRequest } from './training';
export type { Evaluation, Prediction } from './evaluation';
export type { TrainedModel } from './models';
