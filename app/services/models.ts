// Model files and their description: load with full validation, save atomically, summarise as a layer
// table (like Keras' summary()).
import { parsePreprocessing, preprocessingSchema, type Preprocessing } from '../core/data/preprocess';
import { encodeModel, loadModel, saveModel, type Model } from '../core/model/modelFile';
import { formatShape, inferShapes, parameterCount, type LayerInfo } from '../core/model/shapes';
import type { ModelSpec } from '../core/model/spec';

export type TrainedModel = Model<Preprocessing>;

export async function loadModelFile(filePath: string): Promise<TrainedModel> {
  return loadModel(filePath, { preprocessingSchema });
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

function describeLayer(spec: ModelSpec, index: number): string {
  const layer = spec.layers[index];
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
      return '';
  }
}

const thousands = (value: number) => value.toLocaleString('en-US');

/** A fixed-width text table: layer, settings, output shape, parameters, multiply-adds; then totals. */
export function formatLayerTable(spec: ModelSpec): string {
  const table = layerTable(spec);
  const rows = [
    ['#', 'layer', 'settings', 'output', 'parameters', 'mult-adds'],
    ['', 'input', '', formatShape(table.input), '', ''],
    ...table.layers.map((layer, index) => [
      String(index + 1), layer.label, describeLayer(spec, index), formatShape(layer.outputShape),
      thousands(layer.parameters), thousands(layer.multiplyAdds),
    ]),
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
