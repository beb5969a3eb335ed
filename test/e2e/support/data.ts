// Data files the flows upload: a tabular CSV with string class labels, written to a scratch folder.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { mulberry32 } from '../../../app/core/data/split';

export const flowerClasses = ['setosa', 'versicolor', 'virginica'] as const;
/** The file's columns as written: a row id (to ignore), four measurements, the label in the middle, a text column. */
export const flowerFileColumns = ['id', 'sepal_length', 'sepal_width', 'species', 'petal_length', 'petal_width', 'garden'] as const;
/** The label column: not the last one, so the test has to choose it. */
export const flowerLabelColumn = 'species';
/** A row number: a feature by default (it is numeric), which the flow sets to Ignore. */
export const flowerIgnoredColumn = 'id';
/** A text column: categorical (one-hot) by default, two values, so two features. */
export const flowerGardens = ['north', 'south'] as const;
/** What the network sees: four measurements and the garden one-hot encoded. */
export const flowerFeatureCount = 4 + flowerGardens.length;

/** A deterministic generator (the splits' mulberry32), so every run sees the same file. */
export const random = mulberry32;

export function gaussian(next: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
}

/**
 * `rows` iris-like examples, the classes in turn, with overlapping clusters (so the confusion matrix has
 * off-diagonal counts). The label is a middle column, the first column a row id and the last a text column.
 */
export function flowerCsv(rows: number, seed: number): string {
  const next = random(seed);
  const lines = [flowerFileColumns.join(',')];
  for (let row = 0; row < rows; row += 1) {
    const c = row % flowerClasses.length;
    const features = [1 + c + 0.9 * gaussian(next), 3 - 0.5 * c + 0.8 * gaussian(next), 1.2 * c + gaussian(next), 0.6 * c + 0.6 * gaussian(next)];
    const [a, b, d, e] = features.map((value) => value.toFixed(3));
    const garden = flowerGardens[next() < 0.5 ? 0 : 1];
    lines.push([String(row + 1), a, b, flowerClasses[c], d, e, garden].join(','));
  }
  return lines.join('\n') + '\n';
}

export function scratchDir(name: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `nnstudio-e2e-${name}-`));
}

export function writeFile(dir: string, name: string, text: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  return file;
}

/** The regression fixture's columns: two features and a numeric target, y = 3·x1 − 2·x2 + noise. */
export const regressionColumns = ['x1', 'x2', 'y'] as const;

/** One row of the regression fixture, as numbers (the file holds them with three decimals). */
export interface RegressionRow {
  x1: number;
  x2: number;
  y: number;
}

/** `rows` examples of y = 3·x1 − 2·x2 + noise (σ 0.1), x1 and x2 uniform in [−2, 2]: every y distinct. */
export function regressionRows(rows: number, seed: number): RegressionRow[] {
  const next = random(seed);
  const round = (value: number) => Number(value.toFixed(3));
  return Array.from({ length: rows }, () => {
    const x1 = round(4 * next() - 2);
    const x2 = round(4 * next() - 2);
    return { x1, x2, y: round(3 * x1 - 2 * x2 + 0.1 * gaussian(next)) };
  });
}

export function regressionCsv(rows: readonly RegressionRow[]): string {
  return [regressionColumns.join(','), ...rows.map((row) => `${row.x1.toFixed(3)},${row.x2.toFixed(3)},${row.y.toFixed(3)}`)].join('\n') + '\n';
}
