// Text rendering of evaluation reports for terminals (`--json` prints the object itself).
import type { ClassificationReport } from '../core/metrics/classification';
import type { RegressionReport } from '../core/metrics/regression';

/** Wider than this many classes, a confusion matrix no longer fits a terminal: its largest confusions are listed instead. */
export const terminalMatrixClasses = 20;
const listedConfusions = 20;

const percent = (value: number) => `${(value * 100).toFixed(2)} %`;
const fixed = (value: number) => value.toFixed(4);

function table(rows: string[][], rightAligned: (column: number) => boolean): string[] {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  return rows.map((row) =>
    row.map((cell, column) => (rightAligned(column) ? cell.padStart(widths[column]) : cell.padEnd(widths[column]))).join('  ').trimEnd(),
  );
}

/** What loading the data noted (files skipped, cells read as missing, …), as `note:` lines for stderr. */
export function dataNoteLines(notes: readonly string[] | undefined): string {
  return (notes ?? []).map((note) => `note: ${note}\n`).join('');
}

export function formatReport(report: ClassificationReport, loss?: number): string {
  const lines: string[] = [];
  lines.push(`accuracy ${percent(report.accuracy)}${loss !== undefined ? `   loss ${fixed(loss)}` : ''}`);
  lines.push('');
  const perClass = [
    ['class', 'precision', 'recall', 'f1', 'support'],
    ...report.perClass.map((row) => [row.label, fixed(row.precision), fixed(row.recall), fixed(row.f1), String(row.support)]),
    ['macro avg', fixed(report.macro.precision), fixed(report.macro.recall), fixed(report.macro.f1), ''],
    ['weighted avg', fixed(report.weighted.precision), fixed(report.weighted.recall), fixed(report.weighted.f1), ''],
  ];
  lines.push(...table(perClass, (column) => column > 0));
  lines.push('');
  lines.push(...confusionLines(report));
  return lines.join('\n');
}

function confusionLines(report: ClassificationReport): string[] {
  const classes = report.labels.length;
  if (classes <= terminalMatrixClasses) {
    const confusion = [['', ...report.labels], ...report.confusion.map((row, i) => [report.labels[i], ...row.map(String)])];
    return ['confusion matrix (rows: true class, columns: predicted)', ...table(confusion, (column) => column > 0)];
  }
  const pairs: { truth: number; predicted: number; count: number }[] = [];
  report.confusion.forEach((row, truth) => row.forEach((count, predicted) => {
    if (truth !== predicted && count > 0) pairs.push({ truth, predicted, count });
  }));
  pairs.sort((a, b) => b.count - a.count || a.truth - b.truth || a.predicted - b.predicted);
  const shown = pairs.slice(0, listedConfusions);
  const heading = [`confusion matrix: ${classes} classes, too wide for a terminal (--json has all of it)`,
    pairs.length === 0 ? 'no example was confused' : `the ${shown.length} largest of ${pairs.length} confusions:`];
  if (shown.length === 0) return heading;
  const rows = [['true class', 'predicted', 'examples'], ...shown.map((p) => [report.labels[p.truth], report.labels[p.predicted], String(p.count)])];
  return [...heading, ...table(rows, (column) => column === 2)];
}

const significant = (value: number) => (Math.abs(value) >= 1e6 || (value !== 0 && Math.abs(value) < 1e-3) ? value.toExponential(4) : trimZeros(value.toPrecision(6)));
/** 12.5000 → 12.5, 100000 stays 100000. */
const trimZeros = (text: string) => (text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text);

/** MAE, RMSE, R² and MAPE, averaged and per target column. */
export function formatRegressionReport(report: RegressionReport, loss?: number): string {
  const mape = (value: number | null) => (value === null ? 'n/a (a true value is 0)' : percent(value));
  const lines = [`R² ${report.r2.toFixed(4)}   MAE ${significant(report.mae)}   RMSE ${significant(report.rmse)}   MAPE ${mape(report.mape)}` +
    `${loss !== undefined ? `   loss ${fixed(loss)}` : ''}`];
  if (report.perTarget.length > 1) {
    lines.push('');
    const rows = [['target', 'R²', 'MAE', 'RMSE', 'MAPE'],
      ...report.perTarget.map((t) => [t.name, t.r2.toFixed(4), significant(t.mae), significant(t.rmse), t.mape === null ? 'n/a' : percent(t.mape)])];
    lines.push(...table(rows, (column) => column > 0));
  }
  return lines.join('\n');
}
