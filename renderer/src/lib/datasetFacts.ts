// What the Data screen shows of a table beyond its shape: the task and why, the target columns, the loader's
// notes and the column report. The data helper's DatasetSummary carries these as optional fields (issue 13);
// read here in one place, each checked, so a server without them shows the screen as before.
import type { DatasetInfo } from '../../../app/api/types';

export type Task = 'classification' | 'regression';

/** One column of the file as the loader saw it (app/core/data/columnReport.ts ColumnReport). */
export interface ColumnReportRow {
  name: string;
  type: string;
  role: string;
  missingShare: number;
  distinct: number;
  distinctCapped?: boolean;
  min?: number;
  max?: number;
  mean?: number;
  histogram?: { min: number; max: number; counts: number[] };
  top?: { value: string; count: number }[];
  notes?: string[];
}

export interface DatasetFacts {
  task: Task;
  taskReason?: string;
  targetNames: string[];
  notes: string[];
  columns: ColumnReportRow[];
}

interface OptionalSummaryFields {
  task?: unknown;
  taskReason?: unknown;
  targetNames?: unknown;
  notes?: unknown;
  columnReport?: unknown;
}

const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((entry): entry is string => typeof entry === 'string') : []);

export function datasetFacts(dataset: DatasetInfo): DatasetFacts {
  const fields: OptionalSummaryFields & DatasetInfo = dataset;
  return {
    task: fields.task === 'regression' ? 'regression' : 'classification',
    ...(typeof fields.taskReason === 'string' ? { taskReason: fields.taskReason } : {}),
    targetNames: strings(fields.targetNames),
    notes: strings(fields.notes),
    columns: Array.isArray(fields.columnReport) ? (fields.columnReport as ColumnReportRow[]) : [],
  };
}

export const taskTitles: Record<Task, string> = { classification: 'Classification', regression: 'Regression' };

/** "categorical (12 values)", "ID-like", "numeric". */
export function columnTypeText(column: ColumnReportRow): string {
  if (column.type === 'categorical') return `categorical (${column.distinct}${column.distinctCapped ? '+' : ''} values)`;
  if (column.type === 'id') return 'ID-like';
  return column.type;
}
