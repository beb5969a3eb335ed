// Predictions of a whole file as a table and as CSV: what `nnstudio predict` writes and what the UI's
// models:predictFile answers, one definition for both faces.
import Papa from 'papaparse';
import type { Prediction } from './evaluation';

export interface PredictionTable {
  columns: string[];
  rows: (string | number)[][];
}

/** `file` after `row` for an image folder's examples ("cats/001.jpg"), so that each prediction names its image. */
function fileColumn(prediction: Prediction): { columns: string[]; cell: (row: number) => string[] } {
  const names = prediction.dataset.exampleNames;
  return names ? { columns: ['file'], cell: (row) => [names[row] ?? ''] } : { columns: [], cell: () => [] };
}

/**
 * Regression: row (and file), then a `predicted_<target>` column per target in the original units, and the
 * true value (`<target>`) where the file had it.
 */
function regressionTable(prediction: Prediction, values: Float64Array, names: string[]): PredictionTable {
  const width = names.length;
  const truth = prediction.dataset.targets;
  const file = fileColumn(prediction);
  const columns = ['row', ...file.columns, ...names.map((name) => `predicted_${name}`), ...(truth ? names : [])];
  const rows: (string | number)[][] = [];
  for (let i = 0; i < values.length / width; i++) {
    const predicted = Array.from(values.subarray(i * width, (i + 1) * width), (value) => Number(value.toPrecision(7)));
    rows.push([i + 1, ...file.cell(i), ...predicted, ...(truth ? Array.from(truth.subarray(i * width, (i + 1) * width)) : [])]);
  }
  return { columns, rows };
}

/** Classification: row (and file), predicted, `label` when the file had labels, then one probability column per class. */
function classificationTable(prediction: Prediction): PredictionTable {
  const classes = prediction.labels.length;
  const labelled = prediction.truth.some((label) => label >= 0);
  const file = fileColumn(prediction);
  const columns = ['row', ...file.columns, 'predicted', ...(labelled ? ['label'] : []), ...prediction.labels.map((label) => `p_${label}`)];
  const rows: (string | number)[][] = [];
  for (let i = 0; i < prediction.predictions.length; i++) {
    const probabilities = Array.from(prediction.probabilities.subarray(i * classes, (i + 1) * classes), (p) => Number(p.toPrecision(6)));
    const truth = prediction.truth[i];
    rows.push([i + 1, ...file.cell(i), prediction.labels[prediction.predictions[i]], ...(labelled ? [truth >= 0 ? prediction.labels[truth] : ''] : []), ...probabilities]);
  }
  return { columns, rows };
}

export function predictionTable(prediction: Prediction): PredictionTable {
  if (prediction.values !== undefined) return regressionTable(prediction, prediction.values, prediction.targetNames ?? ['target']);
  return classificationTable(prediction);
}

/** The table as CSV text (header first, `\n` line ends, a final newline). */
export function tableCsv(table: PredictionTable): string {
  return `${Papa.unparse({ fields: table.columns, data: table.rows }, { newline: '\n' })}\n`;
}

export function predictionsCsv(prediction: Prediction): string {
  return tableCsv(predictionTable(prediction));
}
