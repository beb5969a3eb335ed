// The session's models by id (trained in a run, imported, or opened from the run history): models:list,
// :check, :save, :download, :export, :import, :predict, and runs:open's model.
import { drawingKind } from '../../core/model/drawing';
import * as fs from 'node:fs';
import { rawInputWidth } from '../../services/evaluation';
import { headOfDataset } from '../../core/model/head';
import * as path from 'node:path';
import { parameterCount } from '../../core/model/shapes';
import { writeFileAtomic } from '../../core/files/atomic';
import { services } from '../../services';
import type { TrainedModel } from '../../services/models';
import type { RunStore } from '../../services/runs';
import { showUploadNames } from '../errors';
import type { ParsedPayloadOf } from '../schemas';
import type { ModelCheck, ModelInfo, PredictionFile, PredictionResult, PresetInfo } from '../types';
import type { DatasetRegistry } from './datasets';
import type { IdSequence } from './ids';
import { removeFile, type SessionFolder } from './sessionFolder';

export interface ModelRecord {
  name: string;
  model: TrainedModel;
  /** The saved run it was opened from. */
  savedRunId?: string;
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

/** "iris model on new-flowers predictions.csv": the model's and the data's names without their extensions. */
export function predictionsFileName(modelName: string, dataName: string): string {
  const model = modelName.replace(/\.(safetensors|onnx|m)$/i, '');
  const data = dataName.replace(/ \(uploaded\)$/, '').replace(/\.(csv|tsv|txt)$/i, '');
  return downloadFileName(`${model} on ${data} predictions`, '.csv');
}

/** An uploaded image decoded as the model's training images were (its [C,H,W], and crop unless it was letterboxed). */
async function imageInput(model: TrainedModel, image: { fileName: string; base64: string }): Promise<{ shape: number[]; pixels: number[] }> {
  const shape = model.preprocessing.imageShape ?? model.spec.input;
  if (shape.length !== 3) throw new Error(`${image.fileName}: the model takes ${shape.join('x')} values, not an image`);
  try {
    const pixels = await services.datasets.imageForModel(Buffer.from(image.base64, 'base64'), shape, model.preprocessing.imageFit ?? 'crop');
    return { shape: [...shape], pixels };
  } catch (error) {
    throw Object.assign(new Error(`${image.fileName} cannot be read as an image: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`), { field: 'image' });
  }
}

/** The rows of models:predictFile's preview. */
export const predictionPreviewRows = 20;

/** The file extension of each models:export format. */
export const exportExtensions = { onnx: '.onnx' } as const;

/** models:presets: the built-in models as the editor offers them. */
export function presetInfos(): PresetInfo[] {
  return services.models.presets().map((preset) => ({
    name: preset.name,
    title: preset.title,
    summary: preset.summary,
    cliName: preset.cliName,
    description: preset.description,
    spec: preset.spec,
    training: preset.training,
    gpuOnly: preset.gpuOnly,
  }));
}

/** models:check for an open dataset's shape and classes, or for the ones given. */
export function checkModel({ datasetId, inputShape, classCount, model }: ParsedPayloadOf<'models:check'>, datasets: DatasetRegistry): ModelCheck {
  const data = datasetId !== undefined ? datasets.get(datasetId).dataset : undefined;
  const shape = data ? data.featureShape : (inputShape as number[]);
  const head = data ? headOfDataset(data) : (classCount as number);
  return services.models.check(model, shape, head);
}

export class ModelRegistry {
  private readonly records = new Map<string, ModelRecord>();
  /** Saved run id -> the model runs:open made of it, so opening a run twice gives the same model. */
  private readonly openedRuns = new Map<string, string>();

  constructor(
    private readonly ids: IdSequence,
    private readonly folder: SessionFolder,
  ) {}

  /** Keeps a model under a new id. */
  add(record: ModelRecord): string {
    const id = this.ids.next('model');
    this.records.set(id, record);
    return id;
  }

  get(id: string): ModelRecord {
    const record = this.records.get(id);
    if (!record) throw new Error(`no model with id "${id}" (train one or import one with models:import)`);
    return record;
  }

  list(): ModelInfo[] {
    return [...this.records.entries()].map(([id, record]) => modelInfo(id, record));
  }

  async save({ modelId, path: target, format }: ParsedPayloadOf<'models:save'>): Promise<{ path: string; bytes: number }> {
    const record = this.get(modelId);
    const file = path.resolve(target);
    await services.models.saveAs(file, record.model, format ?? 'safetensors');
    return { path: file, bytes: (await fs.promises.stat(file)).size };
  }

  download(modelId: string): { fileName: string; base64: string } {
    const record = this.get(modelId);
    const bytes = services.models.encode(record.model);
    return { fileName: downloadFileName(record.name), base64: bytes.toString('base64') };
  }

  export({ modelId, format }: ParsedPayloadOf<'models:export'>): { fileName: string; base64: string } {
    const record = this.get(modelId);
    const bytes = services.models.encodeAs(record.model, format);
    return { fileName: downloadFileName(record.name, exportExtensions[format]), base64: bytes.toString('base64') };
  }

  async import({ source }: ParsedPayloadOf<'models:import'>): Promise<ModelInfo> {
    const record = source.kind === 'path'
      ? { name: path.basename(source.path), model: await services.models.load(path.resolve(source.path)) }
      : { name: source.fileName, model: await this.loadUpload(source.fileName, source.base64) };
    const id = this.add(record);
    return modelInfo(id, record);
  }

  /** An uploaded model file, read from a temporary file that is removed at once. */
  private async loadUpload(fileName: string, base64: string): Promise<TrainedModel> {
    const file = await this.folder.writeUpload(fileName, base64);
    try {
      return await services.models.load(file);
    } catch (error) {
      showUploadNames(error, [{ file, name: fileName }]);
      throw error;
    } finally {
      await removeFile(file);
    }
  }

  async predict({ modelId, inputs: given, image, device }: ParsedPayloadOf<'models:predict'>): Promise<PredictionResult> {
    const { model } = this.get(modelId);
    const seen = image ? await imageInput(model, image) : undefined;
    const inputs = seen ? [seen.pixels] : given ?? [];
    const width = rawInputWidth(model);
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
    if (predicted.values !== undefined) {
      const names = model.preprocessing.target?.names ?? ['target'];
      const rows = inputs.map((_, row) => Array.from(predicted.values!.subarray(row * names.length, (row + 1) * names.length)));
      return { probabilities: [], predictions: [], classLabels: [], values: rows, targetNames: [...names] };
    }
    return {
      probabilities: inputs.map((_, row) => Array.from(predicted.probabilities.subarray(row * classes, (row + 1) * classes))),
      predictions: Array.from(predicted.predictions),
      classLabels: [...model.labels],
      ...(seen ? { input: seen } : {}),
    };
  }

  /** models:predictFile: every row of an open dataset, read through the model's own encoding as `nnstudio predict` reads it. */
  async predictFile({ modelId, datasetId, device, path: target }: ParsedPayloadOf<'models:predictFile'>, datasets: DatasetRegistry): Promise<PredictionFile> {
    const record = this.get(modelId);
    const data = datasets.get(datasetId);
    const prediction = await services.evaluation.predict(record.model, data.source, { device });
    const table = services.evaluation.predictionTable(prediction);
    const csv = services.evaluation.tableCsv(table);
    if (target !== undefined) await writeFileAtomic(path.resolve(target), csv);
    return {
      fileName: predictionsFileName(record.name, data.info.name),
      csv,
      rows: table.rows.length,
      columns: table.columns,
      preview: table.rows.slice(0, predictionPreviewRows),
    };
  }

  /** runs:open: the saved run's model joins the session's models, once (opening it again answers the same). */
  async openSaved(store: RunStore, savedRunId: string): Promise<ModelInfo> {
    const record = await store.get(savedRunId);
    const known = this.openedRuns.get(record.id);
    const existing = known && this.records.get(known);
    if (known && existing) return modelInfo(known, existing);
    const model = await store.loadModel(record);
    // Two runs of one file started in the same second share a name; the comparison's pickers need two.
    const taken = [...this.records.values()].some((entry) => entry.name === record.name);
    const opened: ModelRecord = { name: taken ? `${record.name} (${record.id})` : record.name, model, savedRunId: record.id };
    const id = this.add(opened);
    this.openedRuns.set(record.id, id);
    return modelInfo(id, opened);
  }

  /** The run-history ids of the models opened from saved runs, with their names. */
  savedRuns(): { savedRunId: string; name: string }[] {
    return [...this.records.values()].filter((record) => record.savedRunId).map((record) => ({ savedRunId: record.savedRunId!, name: record.name }));
  }

  clear(): void {
    this.records.clear();
    this.openedRuns.clear();
  }
}

function modelInfo(id: string, record: ModelRecord): ModelInfo {
  const { model } = record;
  return {
    id,
    name: record.name,
    labels: [...model.labels],
    inputShape: [...model.inputShape],
    ...(drawingKind(model.inputShape, model.labels) ? { drawing: drawingKind(model.inputShape, model.labels) } : {}),
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
