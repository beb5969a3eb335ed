// What a model's last layer must predict: K classes, or the values of N target columns (regression).
// One place for the rule the model editor, the CLI and training setup apply to a spec and its data.
import type { Dataset } from '../data/dataset';
import { inferShapes } from './shapes';
import { regressionLossNames, type LayerSpec, type LossName, type ModelSpec, type TaskName } from './spec';

export interface ModelHead {
  task: TaskName;
  /** Classes (classification) or target columns (regression). */
  outputs: number;
  /** The data's examples, when known: a small regression table gets a stronger default weight decay. */
  rows?: number;
}

/** A bare class count is a classification head (the API's older form). */
export function asHead(head: number | ModelHead): ModelHead {
  return typeof head === 'number' ? { task: 'classification', outputs: head } : head;
}

export function headOfDataset(dataset: Dataset): ModelHead {
  return dataset.task === 'regression'
    ? { task: 'regression', outputs: dataset.targetNames?.length ?? 1, rows: dataset.count }
    : { task: 'classification', outputs: dataset.classLabels.length };
}

export function specTask(spec: ModelSpec): TaskName {
  return spec.task ?? 'classification';
}

export function isRegressionLoss(loss: LossName): boolean {
  return (regressionLossNames as readonly string[]).includes(loss);
}

/** The last layer's width. */
export function headWidth(spec: ModelSpec): number {
  const layers = inferShapes(spec);
  return layers[layers.length - 1].outputShape[0];
}

/** The head against the data: a message naming the fix, or undefined when they fit. */
export function headError(spec: ModelSpec, head: ModelHead): string | undefined {
  if (head.task === 'regression') {
    if (!isRegressionLoss(spec.loss)) return `the loss ${spec.loss} is for classification; a regression model takes ${regressionLossNames.join(', ')}`;
    const width = headWidth(spec);
    if (width === head.outputs) return undefined;
    const targets = head.outputs === 1 ? '1 target' : `${head.outputs} targets`;
    return `the last layer predicts ${width} value(s) but the data has ${targets}: give it ${head.outputs} unit(s)`;
  }
  const width = headWidth(spec);
  const predicts = width === 1 ? 2 : width;
  if (predicts === head.outputs) return undefined;
  const widths = head.outputs === 2 ? '1 or 2 units' : `${head.outputs} units`;
  return `the last layer predicts ${predicts} classes but the data has ${head.outputs}: give it ${widths}`;
}

/**
 * A spec (the default, a preset's or the user's layers) turned to regression: task set, a classification
 * loss replaced by mse, and a softmax or sigmoid on the last layer (a classifier's head) made linear, since
 * a regression head predicts unbounded values. `sizeHead` (the default model, a preset) gives the last
 * dense layer one unit per target; a user's own layers keep their width, and headError names a mismatch.
 */
export function toRegression(spec: ModelSpec, targets: number, options: { lossChosen: boolean; sizeHead: boolean }): ModelSpec {
  const layers: LayerSpec[] = structuredClone(spec.layers);
  let last = layers.length - 1;
  while (last > 0 && layers[last].kind === 'activation') {
    const layer = layers[last];
    if (layer.kind === 'activation' && (layer.fn === 'softmax' || layer.fn === 'sigmoid')) layers.splice(last, 1);
    last--;
  }
  const head = layers[layers.length - 1];
  if (head.kind === 'dense') {
    if (head.activation === 'softmax' || head.activation === 'sigmoid') delete head.activation;
  }
  const lastDense = layers.map((layer) => layer.kind).lastIndexOf('dense');
  const headLayer = layers[lastDense];
  if (options.sizeHead && lastDense === layers.length - 1 && headLayer?.kind === 'dense') headLayer.units = targets;
  const loss = options.lossChosen || isRegressionLoss(spec.loss) ? spec.loss : 'mse';
  return { ...spec, task: 'regression', layers, loss };
}
