// What the Data screen shows of a loaded dataset: a summary (size, shape, classes and their counts) and a
// preview (the CSV's first rows as written, or the first images as 0-255 pixels). Plain JSON for any face.
import Papa from 'papaparse';
import { readTextHead, sniffDelimiter } from '../core/data/csv';
import { dropTrailingField, endsWithDelimiter, withoutExcelSeparator } from '../core/data/csvQuirks';
import { classCounts, featureSize, type Dataset } from '../core/data/dataset';
import type { DatasetPreview, DatasetSummary, ImagePreview } from '../core/data/datasetViews';
import type { DataSource } from './dataSources';
import type { ColumnReport } from '../core/data/columnReport';
import { defaultValSplitFor } from '../core/model/defaults';

export type { DatasetPreview, DatasetSummary, ImagePreview } from '../core/data/datasetViews';

export const maxPreviewRows = 200;
const previewHeadBytes = 1024 * 1024;

export function summarizeDataset(dataset: Dataset): DatasetSummary {
  return {
    kind: dataset.featureShape.length === 3 ? 'images' : 'table',
    count: dataset.count,
    featureShape: [...dataset.featureShape],
    featureNames: [...dataset.featureNames],
    classLabels: [...dataset.classLabels],
    classCounts: classCounts(dataset),
    ...(dataset.task ? { task: dataset.task } : {}),
    ...(dataset.taskReason ? { taskReason: dataset.taskReason } : {}),
    ...(dataset.targetNames ? { targetNames: [...dataset.targetNames] } : {}),
    ...(dataset.notes && dataset.notes.length > 0 ? { notes: [...dataset.notes] } : {}),
    ...(isUnlabeled(dataset) ? { unlabeled: true as const } : {}),
    ...('report' in dataset && Array.isArray(dataset.report) ? { columnReport: dataset.report as ColumnReport[] } : {}),
    defaultValSplit: defaultValSplitFor(dataset),
  };
}

/** Read without labels or targets (a CSV opened to predict): no class and no target at all. */
function isUnlabeled(dataset: Dataset): boolean {
  return dataset.count > 0 && dataset.targets === undefined && dataset.classLabels.length === 0 && dataset.labels.every((label) => label < 0);
}

/** The first `count` examples: a CSV's rows as written in the file, images as pixels (`perClass`: of each class). */
export async function previewDataset(source: DataSource, dataset: Dataset, count: number, perClass?: number): Promise<DatasetPreview> {
  const rows = Math.max(0, Math.min(Math.floor(count), maxPreviewRows));
  const classes = { classLabels: [...dataset.classLabels], classCounts: classCounts(dataset) };
  if (dataset.featureShape.length === 3) {
    const picked = perClass !== undefined ? firstOfEachClass(dataset, perClass) : firstIndices(dataset, rows);
    return { kind: 'images', images: imagesAt(dataset, picked), ...classes };
  }
  if (source.kind === 'csv') return { kind: 'table', ...(await firstCsvRows(source.path, rows, dataset)), ...classes };
  return { kind: 'table', ...firstFeatureRows(dataset, rows), ...classes };
}

function firstIndices(dataset: Dataset, count: number): number[] {
  return Array.from({ length: Math.min(count, dataset.count) }, (_, i) => i);
}

/** The first `perClass` examples of each class in class order (then unlabeled ones), at most maxPreviewRows. */
function firstOfEachClass(dataset: Dataset, perClass: number): number[] {
  const byClass = Array.from({ length: dataset.classLabels.length + 1 }, () => [] as number[]);
  for (let i = 0; i < dataset.count; i++) {
    const slot = dataset.labels[i] >= 0 ? dataset.labels[i] : dataset.classLabels.length;
    if (byClass[slot].length < perClass) byClass[slot].push(i);
  }
  return byClass.flat().slice(0, maxPreviewRows);
}

function imagesAt(dataset: Dataset, indices: readonly number[]): ImagePreview[] {
  const size = featureSize(dataset.featureShape);
  // Features were divided by pixelScale on load; pixel CSVs without one are shown as they are, clamped.
  const scale = dataset.pixelScale ?? 1;
  const images: ImagePreview[] = [];
  for (const i of indices) {
    const pixels = new Array<number>(size);
    for (let j = 0; j < size; j++) pixels[j] = Math.max(0, Math.min(255, Math.round(dataset.features[i * size + j] * scale)));
    const label = dataset.labels[i];
    images.push({ label: label >= 0 ? dataset.classLabels[label] : null, shape: [...dataset.featureShape], pixels });
  }
  return images;
}

/** The file's own first rows (header as columns when it has one), so the user sees the data as written. */
async function firstCsvRows(file: string, count: number, dataset: Dataset): Promise<{ columns: string[]; rows: string[][] }> {
  const head = await readTextHead(file, previewHeadBytes);
  // A cut last line would show half a row; Excel's sep= line is not a row (the loader skips it too).
  const text = withoutExcelSeparator(head.whole ? head.text : head.text.slice(0, Math.max(0, head.text.lastIndexOf('\n'))));
  const hasHeader = dataset.encoding?.hasHeader ?? false;
  const parsed = Papa.parse<string[]>(text, {
    delimiter: dataset.encoding?.delimiter ?? sniffDelimiter(text),
    skipEmptyLines: 'greedy',
    preview: count + (hasHeader ? 1 : 0),
  });
  const rows = endsWithDelimiter(parsed.data) ? parsed.data.map(dropTrailingField) : parsed.data;
  const all = rows.map((row) => row.map((field) => field.trim()));
  const width = all.reduce((max, row) => Math.max(max, row.length), 0);
  const columns = hasHeader && all.length > 0 ? all[0] : Array.from({ length: width }, (_, i) => `column ${i + 1}`);
  return { columns, rows: hasHeader ? all.slice(1) : all };
}

/** For tabular data not read from a CSV: the features as numbers, then the label. */
function firstFeatureRows(dataset: Dataset, count: number): { columns: string[]; rows: string[][] } {
  const size = featureSize(dataset.featureShape);
  const names = dataset.featureNames.length === size ? dataset.featureNames : Array.from({ length: size }, (_, i) => `feature ${i + 1}`);
  const rows: string[][] = [];
  for (let i = 0; i < Math.min(count, dataset.count); i++) {
    const row = Array.from(dataset.features.subarray(i * size, (i + 1) * size), (value) => String(value));
    row.push(dataset.labels[i] >= 0 ? dataset.classLabels[dataset.labels[i]] : '');
    rows.push(row);
  }
  return { columns: [...names, 'label'], rows };
}
