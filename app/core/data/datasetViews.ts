// What the Data screen shows of a loaded dataset, typed once for the service that computes it
// (app/services/datasetViews.ts) and the UI API. Types only, and nothing of Node, so the renderer may import them.
import type { ColumnReport } from './columnReport';

export interface DatasetSummary {
  /** 'images' for [C,H,W] features, 'table' for flat ones. */
  kind: 'images' | 'table';
  count: number;
  featureShape: number[];
  /** Names of the features (after one-hot expansion); empty for images. */
  featureNames: string[];
  classLabels: string[];
  /** Examples per class, indexed like classLabels. */
  classCounts: number[];
  /** Absent: classification. */
  task?: 'classification' | 'regression';
  /** Why the task was inferred (CSV tables). */
  taskReason?: string;
  /** Regression: the target columns. */
  targetNames?: string[];
  /** The loader's plain-language notes: columns left out, rows dropped, cells read as missing. */
  notes?: string[];
  /** The file was read without a label column (prediction input): it cannot be trained on. */
  unlabeled?: true;
  /** Per column of a CSV: inferred type, what became of it, missing share, distinct values, range, histogram. */
  columnReport?: ColumnReport[];
  /** The validation share training uses when none is given (0 for a small regression table). */
  defaultValSplit: number;
}

export interface ImagePreview {
  /** The class label, or null for an unlabeled example. */
  label: string | null;
  /** [C,H,W] */
  shape: number[];
  /** C*H*W values in CHW order, rounded to 0-255. */
  pixels: number[];
}

/** A CSV's first rows as written, or the first images as 0-255 pixels. */
export type DatasetPreview =
  | { kind: 'table'; columns: string[]; rows: string[][]; classLabels: string[]; classCounts: number[] }
  | { kind: 'images'; images: ImagePreview[]; classLabels: string[]; classCounts: number[] };
