// Model files and their description: load with full validation, save atomically, summarise as a layer
// table (like Keras' summary()); export to ONNX and to the C course tool's model.m, import a model.m.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { parsePreprocessing, preprocessingSchema, type Preprocessing } from '../core/data/preprocess';
import { describeFsError, FileWriteError, writeFileAtomic } from '../core/files/atomic';
import { courseNetworkToModel, formatCourseModel, parseCourseModel, type CourseImportOptions } from '../core/interop/courseModel';
import { encodeOnnxModel } from '../core/interop/onnxExport';
import { encodeModel, loadModel, ModelFileError, saveModel, type Model } from '../core/model/modelFile';
import { formatShape, inferShapes, parameterCount, type LayerInfo } from '../core/model/shapes';
import { batchnormDefaults } from '../core/model/spec';
import type { LayerSpec, ModelSpec } from '../core/model/spec';

export type TrainedModel = Model<Preprocessing>;

/**
 * Reads a model file: an NN Studio safetensors file, or the C course tool's model.m (by its `.m`
 * extension, or by content: plain text starting with an integer, where a safetensors file starts with
 * a little-endian length whose high bytes are zero).
 */
export async function loadModelFile(filePath: string): Promise<TrainedModel> {
  if (await isCourseModelFile(filePath)) return importCourseModel(filePath);
  return loadModel(filePath, { preprocessingSchema });
}

async function isCourseModelFile(filePath: string): Promise<boolean> {
  if (path.extname(filePath).toLowerCase() === '.m') return true;
  let head: Buffer;
  try {
    const handle = await fsp.open(filePath, 'r');
    try {
      const buffer = Buffer.alloc(64);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      head = buffer.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  } catch {
    return false; // loadModel reports the file's problem
  }
  if (head.length < 8 || head.subarray(0, 8).includes(0)) return false;
  return /^\s*\d+\s/.test(head.toString('latin1'));
}

async function readText(filePath: string): Promise<string> {
  try {
    return await fsp.readFile(filePath, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ModelFileError(filePath, `${filePath}: cannot read: ${code === 'ENOENT' ? 'no such file' : describeFsError(error, filePath)}`);
  }
}

/** A model.m of the C course tool as an NN Studio model (docs/FILE_FORMAT.md); errors name the file and line. */
export async function importCourseModel(filePath: string, options: CourseImportOptions = {}): Promise<TrainedModel> {
  const text = await readText(filePath);
  return parseCourseModelText(text, filePath, options);
}

/** The same from the file's text; `file` names it in errors. */
export function parseCourseModelText(text: string, file: string, options: CourseImportOptions = {}): TrainedModel {
  return courseNetworkToModel(parseCourseModel(text, file), file, options);
}

/** The model as a model.m (dense sigmoid MLPs without preprocessing only; the error says why not). */
export function exportCourseModel(model: TrainedModel): string {
  return formatCourseModel(model);
}

const packageVersion = (): string => {
  try {
    return String(require('../../../package.json').version);
  } catch {
    return ''; // a copy of the app without its package.json: the ONNX file names no producer version
  }
};

/** The model as ONNX bytes (opset 13, preprocessing as graph nodes; docs/FILE_FORMAT.md). */
export function exportOnnx(model: TrainedModel): Buffer {
  parsePreprocessing(model.preprocessing);
  return Buffer.from(encodeOnnxModel(model, { producerVersion: packageVersion() }));
}

export type ExportFormat = 'safetensors' | 'onnx' | 'course';

/** The bytes of `model` in `format`. */
export function encodeModelAs(model: TrainedModel, format: ExportFormat): Buffer {
  if (format === 'onnx') return exportOnnx(model);
  if (format === 'course') return Buffer.from(exportCourseModel(model), 'utf8');
  return encodeModelFile(model);
}

/** Writes `model` in `format` atomically; errors name the path. */
export async function saveModelAs(filePath: string, model: TrainedModel, format: ExportFormat): Promise<void> {
  if (format === 'safetensors') return saveModelFile(filePath, model);
  let bytes: Buffer;
  try {
    bytes = encodeModelAs(model, format);
  } catch (error) {
    throw new ModelFileError(filePath, `cannot export ${format === 'onnx' ? 'ONNX' : 'model.m'} to ${filePath}: ${(error as Error).message}`);
  }
  try {
    await writeFileAtomic(filePath, bytes);
  } catch (error) {
    const reason = error instanceof FileWriteError ? error.reason : (error as Error).message;
    throw new ModelFileError(filePath, `cannot save ${filePath}: ${reason}`);
  }
}

export async function saveModelFile(filePath: string, model: TrainedModel): Promise<void> {
  parsePreprocessing(model.preprocessing);
  await saveModel(filePath, model);
}

/** The bytes saveModelFile writes (same checks, same encoder), for a face that hands the file to its user. */
export function encodeModelFile(model: TrainedModel): Buffer {
  parsePreprocessing(model.preprocessing);
  return encodeModel(model);
}

export interface LayerTable {
  input: number[];
  layers: LayerInfo[];
  totalParameters: number;
  totalMultiplyAdds: number;
}

export function layerTable(spec: ModelSpec): LayerTable {
  const layers = inferShapes(spec);
  return {
    input: [...spec.input],
    layers,
    totalParameters: parameterCount(spec),
    totalMultiplyAdds: layers.reduce((sum, layer) => sum + layer.multiplyAdds, 0),
  };
}

function describeLayer(layer: LayerSpec, info: LayerInfo): string {
  switch (layer.kind) {
    case 'dense':
      return `${layer.units} units${layer.activation && layer.activation !== 'linear' ? `, ${layer.activation}` : ''}`;
    case 'conv2d':
      return `${layer.filters} × ${layer.kernel[0]}x${layer.kernel[1]}, stride ${layer.stride ?? 1}, ${layer.padding ?? 'valid'}` +
        `${layer.activation && layer.activation !== 'linear' ? `, ${layer.activation}` : ''}`;
    case 'maxpool2d':
    case 'avgpool2d':
      return `${layer.size}x${layer.size}, stride ${layer.stride ?? layer.size}`;
    case 'dropout':
      return `rate ${layer.rate}`;
    case 'activation':
      return layer.fn + (layer.fn === 'leaky_relu' ? ` (alpha ${layer.alpha ?? 0.01})` : '');
    case 'flatten':
    case 'global_avgpool':
      return '';
    case 'batchnorm':
      return `momentum ${layer.momentum ?? batchnormDefaults.momentum}, eps ${layer.eps ?? batchnormDefaults.eps}` +
        (layer.affine === false ? ', not affine' : '');
    case 'residual': {
      const shortcut = info.block?.shortcut;
      return `${layer.layers.length} layers, ` +
        (shortcut?.kind === 'projection' ? `1x1 projection shortcut, stride ${shortcut.stride}` : 'identity shortcut');
    }
  }
}

const thousands = (value: number) => value.toLocaleString('en-US');

/** A fixed-width text table: layer, settings, output shape, parameters, multiply-adds; then totals. */
export function formatLayerTable(spec: ModelSpec): string {
  const table = layerTable(spec);
  const rows = [
    ['#', 'layer', 'settings', 'output', 'parameters', 'mult-adds'],
    ['', 'input', '', formatShape(table.input), '', ''],
    ...table.layers.flatMap((layer, index) => {
      const specLayer = spec.layers[index];
      const row = [
        String(index + 1), layer.label, describeLayer(specLayer, layer), formatShape(layer.outputShape),
        thousands(layer.parameters), thousands(layer.multiplyAdds),
      ];
      // a residual block's layers follow it, numbered 3.1, 3.2, ... (its row counts them all)
      const inner = specLayer.kind === 'residual' && layer.block
        ? layer.block.layers.map((innerInfo, j) => [
          `${index + 1}.${j + 1}`, `  ${specLayer.layers[j].kind}`, describeLayer(specLayer.layers[j], innerInfo),
          formatShape(innerInfo.outputShape), thousands(innerInfo.parameters), thousands(innerInfo.multiplyAdds),
        ])
        : [];
      return [row, ...inner];
    }),
  ];
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  const numeric = new Set([0, 4, 5]);
  const line = (row: string[]) =>
    row.map((cell, column) => (numeric.has(column) ? cell.padStart(widths[column]) : cell.padEnd(widths[column]))).join('  ').trimEnd();
  const rule = '─'.repeat(widths.reduce((a, b) => a + b, 0) + 2 * (widths.length - 1));
  const optimizer = spec.optimizer.kind === 'sgd'
    ? `sgd lr ${spec.optimizer.lr} momentum ${spec.optimizer.momentum ?? 0}`
    : `adam lr ${spec.optimizer.lr} betas ${spec.optimizer.beta1 ?? 0.9}/${spec.optimizer.beta2 ?? 0.999}`;
  return [
    line(rows[0]), rule, ...rows.slice(1).map(line), rule,
    `total parameters: ${thousands(table.totalParameters)}   mult-adds per sample: ${thousands(table.totalMultiplyAdds)}`,
    `loss: ${spec.loss}   optimizer: ${optimizer}   seed: ${spec.seed}`,
  ].join('\n');
}
