// `nnstudio runs`: the run history (every training recorded by `train`, `serve` and the desktop app): list,
// show one, compare two, delete. Unreadable run files are named on stderr and skipped.
import { counted } from '../../core/files/messages';
import { Command } from 'commander';
import { compareRuns, type MetricRow } from '../../core/runs/compare';
import type { RunRecord, RunSummary } from '../../core/runs/runFile';
import type { EpochRecord } from '../../core/model/modelFile';
import { services } from '../../services';
import { formatReport } from '../report';

interface JsonOption {
  json?: boolean;
}

// ---- text helpers ----

const percent = (value: number | null | undefined) => (value === null || value === undefined ? '–' : `${(value * 100).toFixed(2)} %`);
const decimal = (value: number | null | undefined) => (value === null || value === undefined ? '–' : value.toFixed(4));
const seconds = (value: number) => (value < 10 ? `${value.toFixed(2)} s` : value < 600 ? `${value.toFixed(1)} s` : `${(value / 60).toFixed(1)} min`);

/** Local "2025-03-14 09:30" from an ISO time. */
function localDate(iso: string, withSeconds = false): string {
  const date = new Date(iso);
  const pad = (value: number) => String(value).padStart(2, '0');
  const time = `${pad(date.getHours())}:${pad(date.getMinutes())}${withSeconds ? `:${pad(date.getSeconds())}` : ''}`;
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${time}`;
}

/** Fixed-width columns; `right` lists the right-aligned ones. */
function table(rows: string[][], right: ReadonlySet<number> = new Set()): string {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  return rows
    .map((row) => row.map((cell, column) => (right.has(column) ? cell.padStart(widths[column]) : cell.padEnd(widths[column]))).join('  ').trimEnd())
    .join('\n');
}

function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

function warnProblems(problems: readonly { message: string }[]): void {
  for (const problem of problems) process.stderr.write(`skipped ${problem.message}\n`);
}

// ---- list ----

async function listRuns(options: JsonOption): Promise<void> {
  const listing = await services.runs.list();
  const directory = services.runs.directory();
  if (options.json) {
    printJson({ directory, ...listing });
    return;
  }
  warnProblems(listing.problems);
  if (listing.runs.length === 0) {
    process.stdout.write(`no saved runs in ${directory} (nnstudio train records one)\n`);
    return;
  }
  const epochs = (run: RunSummary) => (run.epochs === run.plannedEpochs ? String(run.epochs) : `${run.epochs}/${run.plannedEpochs}`);
  const rows = [
    ['id', 'date', 'data', 'model', 'epochs', 'test acc', 'status'],
    ...listing.runs.map((run) => [run.id, localDate(run.createdAt), run.data, run.model, epochs(run), percent(run.testAccuracy), run.status]),
  ];
  process.stdout.write(`${table(rows, new Set([4, 5]))}\n`);
}

// ---- show ----

function historyTable(history: readonly EpochRecord[]): string {
  const rows = [
    ['epoch', 'train loss', 'train acc', 'val loss', 'val acc', 'seconds'],
    ...history.map((epoch) => [
      String(epoch.epoch), decimal(epoch.trainLoss), percent(epoch.trainAccuracy), decimal(epoch.validationLoss), percent(epoch.validationAccuracy),
      epoch.seconds.toFixed(2),
    ]),
  ];
  return table(rows, new Set([0, 1, 2, 3, 4, 5]));
}

function describeRun(record: RunRecord, modelPath: string | undefined): string {
  const { options, data } = record;
  const lines = [
    `run ${record.id}: ${record.name}`,
    `status      ${record.status}${record.message ? ` (${record.message})` : ''}`,
    `started     ${localDate(record.createdAt, true)}, finished ${localDate(record.finishedAt, true)}; trained ${seconds(record.seconds)} on ${options.deviceName}`,
    `data        ${data.description}${data.testDescription ? `, tested on ${data.testDescription}` : ''}`,
    `            ${data.trainCount} training, ${data.validationCount} validation, ${data.testCount} test examples; classes ${data.classLabels.join(', ')}`,
    `training    ${record.history.length} of ${counted(Number(options.epochs), 'epoch')}, batch ${options.batchSize}, ${options.optimizer} lr ${options.lr}, seed ${options.seed}, normalisation ${options.normalize}`,
    `model file  ${modelPath ?? 'none kept'}`,
    '',
    services.models.formatLayerTable(record.spec),
  ];
  if (record.history.length > 0) lines.push('', historyTable(record.history));
  if (record.test) lines.push('', `test set (${data.testCount} examples):`, formatReport(record.test.report, record.test.loss ?? undefined));
  return lines.join('\n');
}

async function showRun(id: string, options: JsonOption): Promise<void> {
  const record = await services.runs.get(id);
  const modelPath = services.runs.modelPath(record);
  if (options.json) printJson({ ...record, modelPath: modelPath ?? null });
  else process.stdout.write(`${describeRun(record, modelPath)}\n`);
}

// ---- compare ----

function metricText(row: MetricRow, value: number | null): string {
  if (value === null) return '–';
  switch (row.kind) {
    case 'percent':
      return percent(value);
    case 'decimal':
      return decimal(value);
    case 'count':
      return String(value);
    case 'seconds':
      return seconds(value);
  }
}

function differenceText(row: MetricRow): string {
  if (row.difference === null) return '';
  const sign = row.difference > 0 ? '+' : row.difference < 0 ? '−' : '±';
  const size = Math.abs(row.difference);
  const amount = row.kind === 'percent' ? `${(size * 100).toFixed(2)} pt` : row.kind === 'count' ? String(size) : row.kind === 'seconds' ? seconds(size) : size.toFixed(4);
  const better = row.better === 'neither' || row.difference === 0 ? '' : (row.better === 'higher') === row.difference > 0 ? '  better' : '  worse';
  return `${sign}${amount}${better}`;
}

async function compare(firstId: string, secondId: string, options: JsonOption): Promise<void> {
  const [first, second] = await Promise.all([services.runs.get(firstId), services.runs.get(secondId)]);
  const comparison = compareRuns(first, second);
  if (options.json) {
    printJson(comparison);
    return;
  }
  const lines = [`first:  ${first.id}  ${first.name}`, `second: ${second.id}  ${second.name}`, ''];
  lines.push(table([
    ['metric', 'first', 'second', 'second − first'],
    ...comparison.metrics.map((row) => [row.name, metricText(row, row.first), metricText(row, row.second), differenceText(row)]),
  ], new Set([1, 2])));
  lines.push('', table([
    ['setting', 'first', 'second', ''],
    ...comparison.settings.map((row) => [row.name, row.first, row.second, row.same ? '' : '≠']),
  ]));
  if (comparison.history.length > 0) {
    const cells = (epoch: EpochRecord | null) => (epoch ? [decimal(epoch.trainLoss), decimal(epoch.validationLoss), percent(epoch.validationAccuracy)] : ['', '', '']);
    lines.push('', table([
      ['epoch', '1: train loss', '1: val loss', '1: val acc', '2: train loss', '2: val loss', '2: val acc'],
      ...comparison.history.map((pair) => [String(pair.epoch), ...cells(pair.first), ...cells(pair.second)]),
    ], new Set([0, 1, 2, 3, 4, 5, 6])));
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

// ---- delete ----

async function deleteRun(id: string, options: JsonOption): Promise<void> {
  const deleted = await services.runs.delete(id);
  if (options.json) printJson({ deleted });
  else process.stdout.write(`deleted run ${deleted} and its model file\n`);
}

// ---- the command ----

export function runsCommand(): Command {
  const command = new Command('runs').description('the run history: every recorded training (`nnstudio runs` lists them)');
  const idHelp = 'a run id, or the start of exactly one';
  command.addCommand(
    new Command('list')
      .description('list the saved runs, newest first')
      .option('--json', 'print JSON: { directory, runs, problems }')
      .action((options: JsonOption) => listRuns(options)),
    { isDefault: true },
  );
  command.addCommand(
    new Command('show').description('one run in full: settings, layers, per-epoch history, test metrics')
      .argument('<id>', idHelp)
      .option('--json', 'print the run file (plus modelPath)')
      .action((id: string, options: JsonOption) => showRun(id, options)),
  );
  command.addCommand(
    new Command('compare').description('two runs side by side: metrics with their difference, settings, per-epoch history')
      .argument('<first>', idHelp)
      .argument('<second>', idHelp)
      .option('--json', 'print JSON')
      .action((first: string, second: string, options: JsonOption) => compare(first, second, options)),
  );
  command.addCommand(
    new Command('delete').description('delete a run and its model file')
      .argument('<id>', idHelp)
      .option('--json', 'print JSON')
      .action((id: string, options: JsonOption) => deleteRun(id, options)),
  );
  for (const sub of command.commands) sub.exitOverride();
  return command;
}
