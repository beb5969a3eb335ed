// The examples behind one cell of a confusion matrix: which examples of class `actual` the model called
// `predicted`, sorted by how sure it was. Kept apart from the session so it is a pure function of an
// evaluation's outputs and its data as read (before normalisation, so they show as the user knows them).
import { featureSize, type Dataset } from '../core/data/dataset';

/** What an evaluation leaves behind for browsing its examples. */
export interface PredictionSet {
  classLabels: string[];
  /** The model's input shape: [C,H,W] shows examples as images, [F] as rows of values. */
  inputShape: number[];
  /** The data as read, before normalisation (features divided by pixelScale when it has one). */
  data: Dataset;
  predictions: Int32Array;
  /** (count, classes) row-major. */
  probabilities: Float32Array;
}

export type ConfidenceOrder = 'highest' | 'lowest';

export interface CellQuery {
  actual: number;
  predicted: number;
  order?: ConfidenceOrder;
  limit?: number;
  offset?: number;
}

export interface CellExample {
  /** The example's row in the evaluated data. */
  index: number;
  /** The predicted class's probability. */
  confidence: number;
  /** Every class's probability. */
  probabilities: number[];
  /** Images: C*H*W values 0-255 in CHW order. */
  pixels?: number[];
  /** Tables: the feature values as read from the file (after categorical encoding). */
  values?: number[];
}

export interface CellExamples {
  actual: number;
  predicted: number;
  order: ConfidenceOrder;
  /** How many examples the cell holds (the page below is `offset`..`offset + examples.length`). */
  total: number;
  offset: number;
  kind: 'images' | 'table';
  /** [C,H,W] for images; [F] for tables. */
  shape: number[];
  /** Names of the values of a table row (empty for images). */
  featureNames: string[];
  classLabels: string[];
  examples: CellExample[];
}

export const defaultExampleLimit = 48;
export const maxExampleLimit = 200;

/** Indices of the examples in the cell, by the predicted class's probability (ties: data order). */
export function cellIndices(set: PredictionSet, actual: number, predicted: number, order: ConfidenceOrder): number[] {
  const classes = set.classLabels.length;
  const indices: number[] = [];
  for (let i = 0; i < set.data.count; i++) {
    if (set.data.labels[i] === actual && set.predictions[i] === predicted) indices.push(i);
  }
  const confidence = (i: number) => set.probabilities[i * classes + predicted];
  const sign = order === 'highest' ? -1 : 1;
  return indices.sort((a, b) => sign * (confidence(a) - confidence(b)) || a - b);
}

export function cellExamples(set: PredictionSet, query: CellQuery): CellExamples {
  const classes = set.classLabels.length;
  for (const field of ['actual', 'predicted'] as const) {
    const value = query[field];
    if (!Number.isInteger(value) || value < 0 || value >= classes) {
      throw Object.assign(new Error(`${field}: class ${value} is outside 0..${classes - 1}`), { field });
    }
  }
  const order = query.order ?? 'highest';
  const limit = Math.min(query.limit ?? defaultExampleLimit, maxExampleLimit);
  const offset = query.offset ?? 0;
  const indices = cellIndices(set, query.actual, query.predicted, order);
  const images = set.inputShape.length === 3;
  const width = featureSize(set.data.featureShape);
  const scale = set.data.pixelScale ?? 1;
  const examples = indices.slice(offset, offset + limit).map((index): CellExample => {
    const probabilities = Array.from(set.probabilities.subarray(index * classes, (index + 1) * classes));
    const row = set.data.features.subarray(index * width, (index + 1) * width);
    const example: CellExample = { index, confidence: probabilities[query.predicted], probabilities };
    // Pixels read from a file without a pixelScale are shown as they are, clamped to 0-255.
    if (images) example.pixels = Array.from(row, (value) => Math.max(0, Math.min(255, Math.round(value * scale))));
    else example.values = Array.from(row, (value) => value * scale);
    return example;
  });
  return {
    actual: query.actual,
    predicted: query.predicted,
    order,
    total: indices.length,
    offset,
    kind: images ? 'images' : 'table',
    shape: [...set.inputShape],
    featureNames: images ? [] : featureNamesOf(set.data, width),
    classLabels: [...set.classLabels],
    examples,
  };
}

function featureNamesOf(data: Dataset, width: number): string[] {
  return data.featureNames.length === width ? [...data.featureNames] : Array.from({ length: width }, (_, i) => `feature ${i + 1}`);
}
