// `nnstudio inspect --data f.csv` and the Data screen's column report (issue 13): what each column of a
// CSV is, how much is missing, and the task the label column implies, without training anything.
import { loadCsv } from '../core/data/csv';
import type { ColumnReport } from '../core/data/columnReport';
import { DataError } from '../core/data/errors';
import type { DataSource } from './dataSources';

export interface DataInspection {
  source: string;
  rows: number;
  /** Features after encoding (one-hot blocks, date parts), before imputation. */
  features: number;
  task: 'classification' | 'regression';
  taskReason?: string;
  classLabels: string[];
  targetNames?: string[];
  columns: ColumnReport[];
  notes: string[];
}

/** The column report of a CSV source (the whole file is read; nothing is kept but the report). */
export async function inspectData(source: DataSource): Promise<DataInspection> {
  if (source.kind !== 'csv') throw new DataError(source.kind === 'idx' ? source.imagesPath : source.kind === 'folder' ? source.path : 'mnist', 'the column report is for CSV files');
  const dataset = await loadCsv(source.path, { ...(source.options ?? {}), report: true });
  return {
    source: source.path,
    rows: dataset.count,
    features: dataset.featureNames.length,
    task: dataset.task ?? 'classification',
    ...(dataset.taskReason !== undefined ? { taskReason: dataset.taskReason } : {}),
    classLabels: dataset.classLabels,
    ...(dataset.targetNames !== undefined ? { targetNames: dataset.targetNames } : {}),
    columns: dataset.report ?? [],
    notes: dataset.notes ?? [],
  };
}

const bars = '▁▂▃▄▅▆▇█';

/** Ten counts as ten bar characters, scaled to the largest (a zero count is a space). */
export function textHistogram(counts: readonly number[]): string {
  const largest = Math.max(1, ...counts);
  return counts.map((count) => (count === 0 ? ' ' : bars[Math.min(bars.length - 1, Math.floor((count / largest) * (bars.length - 1e-9)))])).join('');
}

function shortNumber(value: number | undefined): string {
  if (value === undefined) return '';
  if (Number.isInteger(value) && Math.abs(value) < 1e7) return String(value);
  return Number(value.toPrecision(4)).toString();
}

function cut(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, width - 1)}…`;
}

/** The report as a compact table: one line per column, a text histogram or the top values, then notes. */
export function formatInspection(inspection: DataInspection): string {
  const header = ['column', 'type', 'use', 'missing', 'distinct', 'range / top values', 'histogram'];
  const rows = inspection.columns.map((column) => [
    cut(column.name, 24),
    column.type,
    column.role === 'feature' ? `${column.features} feat.` : column.role,
    column.missing === 0 ? '0' : `${column.missing} (${(column.missingShare * 100).toFixed(1)}%)`,
    `${column.distinct}${column.distinctCapped ? '+' : ''}`,
    column.histogram !== undefined
      ? `${shortNumber(column.min)} … ${shortNumber(column.max)}, mean ${shortNumber(column.mean)}`
      : cut((column.top ?? []).slice(0, 3).map((entry) => `${entry.value} (${entry.count})`).join(', '), 40),
    column.histogram !== undefined ? textHistogram(column.histogram.counts) : '',
  ]);
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i])).join('  ').trimEnd();
  const lines = [
    `${inspection.source}: ${inspection.rows} rows, ${inspection.columns.length} columns → ${inspection.features} features`,
    `task: ${inspection.task}${inspection.taskReason !== undefined ? ` (${inspection.taskReason})` : ''}`,
    '',
    line(header),
    ...rows.map(line),
  ];
  const columnNotes = inspection.columns.flatMap((column) => column.notes.filter((note) => note !== inspection.taskReason).map((note) => `${column.name}: ${note}`));
  if (columnNotes.length > 0) lines.push('', 'notes:', ...columnNotes.map((note) => `  ${note}`));
  const datasetNotes = inspection.notes.filter((note) => !note.startsWith('column '));
  if (datasetNotes.length > 0) lines.push(...(columnNotes.length > 0 ? [] : ['', 'notes:']), ...datasetNotes.map((note) => `  ${note}`));
  return lines.join('\n');
}
