// Text rendering of a classification report for terminals (`--json` prints the object itself).
import type { ClassificationReport } from '../core/metrics/classification';

const percent = (value: number) => `${(value * 100).toFixed(2)} %`;
const fixed = (value: number) => value.toFixed(4);

function table(rows: string[][], rightAligned: (column: number) => boolean): string[] {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  return rows.map((row) =>
    row.map((cell, column) => (rightAligned(column) ? cell.padStart(widths[column]) : cell.padEnd(widths[column]))).join('  ').trimEnd(),
  );
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
  lines.push('confusion matrix (rows: true class, columns: predicted)');
  const confusion = [['', ...report.labels], ...report.confusion.map((row, i) => [report.labels[i], ...row.map(String)])];
  lines.push(...table(confusion, (column) => column > 0));
  return lines.join('\n');
}
