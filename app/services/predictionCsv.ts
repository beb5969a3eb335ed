// Predictions of a whole file as a table and as CSV: what `nnstudio predict` writes and what the UI's
// models:predictFile answers, one definition for both faces.
import Papa from 'papaparse';
import type { Prediction } from './evaluation';

export interface PredictionTable {
  columns: string[];
  rows: (string | number)[][];
}

/**
 * Regression: row, then a `predicted_<target>` column per target in the original units, and the true value
 * (`<target>`) where the file had it.
 */
function regressionTable(prediction: Prediction, values: Float64Array, names: string[]): PredictionTable {
  const width = names.length;
  const truth = prediction.dataset.targets;
  const columns = ['row', ...names.map((name) => `predicted_${name}`), ...(truth ? names : [])];
  const rows: (string | number)[][] = [];
  for (let i = 0; i < values.length / width; i++) {
    const predicted = Array.from(values.subarray(i * width, (i + 1) * width), (value) => Number(value.toPrecision(7)));
    rows.push([i + 1, ...predicted, ...(truth ? Array.from(truth.subarray(i * width, (i + 1) * width)) : [])]);
  }
  return { columns, rows };
}

/** Classification: row, predicted, `label` when the file had labels, then one probability column per class. */
function classificationTable(prediction: Prediction): PredictionTable {
  const classes = prediction.labels.length;
  const labelled = prediction.truth.some((label) => label >= 0);
  const columns = ['row', 'predicted', ...(labelled ? ['label'] : []), ...prediction.labels.map((label) => `p_${label}`)];
  const rows: (string | number)[][] = [];
  for (let i = 0; i < prediction.predictions.length; i++) {
    const probabilities = Array.from(prediction.probabilities.subarray(i * classes, (i + 1) * classes), (p) => Number(p.toPrecision(6)));
    const truth = prediction.truth[i];
    rows.push([i + 1, prediction.labels[prediction.predictions[i]], ...(labelled ? [truth >= 0 ? prediction.labels[truth] : ''] : []), ...probabilities]);
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
