// `nnstudio search`: a hyperparameter search (services/search.ts): seeded trials, successive halving on the
// validation data, a leaderboard, the winner tested once and saved; every trial a run in the run history.
import * as path from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { countLimits } from '../../core/model/countLimits';
import { counted } from '../../core/files/messages';
import { epochsShort, epochsText } from '../../core/search/halving';
import { searchSpaceSchema, type DataKind, type SearchSpace, type TrialConfig } from '../../core/search/space';
import { services } from '../../services';
import type { SearchEvent, SearchOutcome, SearchRequest, TrialRun } from '../../services/search';
import { addDataOptions, checkOutputPath, countWithin, dataSourceFrom, fraction, positiveNumber, precisionOption, threadCount, type DataOptions } from '../options';
import type { Precision } from '../../core/model/precision';
import { formatDuration } from '../progressBar';
import { formatRegressionReport, formatReport } from '../report';
import { untilInterrupted } from '../interrupt';

interface SearchCommandOptions extends DataOptions {
  testData?: string;
  trials: number;
  minEpochs?: number;
  maxEpochs?: number;
  eta: number;
  budget?: number;
  space?: Partial<SearchSpace>;
  seed: number;
  valSplit?: number;
  testSplit?: number;
  device: 'auto' | 'cpu' | 'cuda';
  precision?: Precision;
  threads?: number;
  parallel?: number;
  out: string;
  json?: boolean;
  history: boolean;
}

export function searchCommand(): Command {
  const command = new Command('search').description('search layers and settings: seeded trials, successive halving on the validation data, the winner tested and saved');
  addDataOptions(command, 'the data: a CSV file, an image folder, an IDX images file, or "mnist" (default: mnist)');
  return command
    .option('--test-data <source>', 'separate test data (default: MNIST\'s test images, or --test-split of the data)')
    .option('--trials <n>', 'trials drawn', countWithin('--trials', { min: 1, max: 10000 }), 27)
    .option('--min-epochs <n>', 'epochs of the first rung; below 1 (0.1, 1/9), one pass over that share of the training data (default: as many rungs below --max-epochs as the trials allow)', epochsOrShare)
    .option('--max-epochs <n>', 'epochs of the last rung (default: 9 for 60 000 examples, more for fewer, up to 180)', countWithin('--max-epochs', countLimits.epochs))
    .option('--eta <n>', 'each rung keeps the best 1/eta, which train longer (eta times by default), up to --max-epochs', countWithin('--eta', { min: 2, max: 100 }), 3)
    .option('--budget <seconds>', 'stop starting trials after this many seconds (the best so far wins)', positiveNumber('--budget'))
    .option('--space <json>', 'parts of the search space as JSON, e.g. \'{"depth":[1,2],"lr":[0.001,0.01]}\' (docs/SEARCH.md)', parseSpace)
    .option('--seed <n>', 'seed for the draws, splits, weights and data order', countWithin('--seed', countLimits.seed), 0)
    .option('--val-split <f>', 'fraction of the training data the search selects on (default 0.1)', fraction('--val-split'))
    .option('--test-split <f>', 'fraction held out for the final test when there is no test data', fraction('--test-split'))
    .addOption(new Option('--device <device>', 'where to train').choices(['auto', 'cpu', 'cuda']).default('auto'))
    .addOption(precisionOption())
    .option('--threads <n>', 'CPU threads (default: all)', countWithin('--threads', threadCount))
    .option('--parallel <n>', 'trials training at once (default: 4 on a GPU, 1 on the CPU); the winner does not depend on it', countWithin('--parallel', countLimits.parallelTrials))
    .option('--out <file>', 'where to save the best model', 'best.safetensors')
    .option('--json', 'print one JSON object with the search instead of text')
    .option('--no-history', 'do not record the trials in the run history (nnstudio runs)')
    .action(async (options: SearchCommandOptions) => runSearchCommand(options));
}

function parseSpace(text: string): Partial<SearchSpace> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`--space takes JSON, e.g. '{"depth":[1,2]}', got ${text}`);
  }
  const checked = searchSpaceSchema.partial().safeParse(value);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new Error(`--space: ${issue.path.join('.') || 'the object'}: ${issue.message}`);
  }
  return checked.data;
}

async function runSearchCommand(options: SearchCommandOptions): Promise<void> {
  checkOutputPath(options.out);
  const data = await dataSourceFrom(options.data ?? 'mnist', 'train', options);
  const testData = options.testData !== undefined ? await dataSourceFrom(options.testData, 'test', { ...options, limit: undefined, classNames: undefined }) : undefined;
  const request: SearchRequest = {
    data, ...(testData ? { testData } : {}),
    trials: options.trials, eta: options.eta,
    ...(options.budget !== undefined ? { budgetSeconds: options.budget } : {}),
    ...(options.minEpochs !== undefined ? { minEpochs: options.minEpochs } : {}),
    ...(options.maxEpochs !== undefined ? { maxEpochs: options.maxEpochs } : {}),
    ...(options.space ? { space: options.space } : {}),
    seed: options.seed, device: options.device,
    ...(options.precision ? { precision: options.precision } : {}),
    ...(options.valSplit !== undefined ? { valSplit: options.valSplit } : {}),
    ...(options.testSplit !== undefined ? { testSplit: options.testSplit } : {}),
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
    ...(options.parallel !== undefined ? { parallel: options.parallel } : {}),
  };
  const progress = progressLines();
  const result = await untilInterrupted((signal) => services.search.run(request, {
    signal,
    onEvent: (event) => { if (!options.json) process.stderr.write(progress(event)); },
    ...(options.history ? { history: { store: services.runs.store() } } : {}),
  }), 'the search after the trials training');
  await services.models.save(options.out, result.outcome.model);
  process.stdout.write(options.json ? `${JSON.stringify(searchJson(result, options.out))}\n` : `${searchReport(result, options.out)}\n`);
  if (result.cancelled) process.exitCode = 130;
}

/** Progress lines for stderr; a trial's layers read by the data's kind, which the plan event names. */
function progressLines(): (event: SearchEvent) => string {
  let kind: DataKind = 'table';
  return (event) => {
    if (event.type === 'plan') {
      kind = event.kind;
      const rungs = event.rungs.map((rung) => `${rung.trials} x ${epochsText(rung.epochs)}`).join(', then ');
      const together = event.parallel > 1 ? `; ${event.parallel} trials at a time` : '';
      return `searching on ${event.data}: ${event.examples} ${kind === 'image' ? 'images' : 'rows'} before the splits; ${rungs}${together}\n`;
    }
    const { run, done, total } = event;
    return `  [${done}/${total}] trial ${run.config.trial}, ${epochsText(run.epochs)}: ${scoreText(run)}  ${describeTrial(run.config, kind)}\n`;
  };
}

/** --min-epochs: whole epochs, or a share of one pass below 1 ("0.25", "1/9", "2/9"). */
function epochsOrShare(value: string): number {
  const text = value.trim();
  const ratio = /^(\d+)\/(\d+)$/.exec(text);
  const number = ratio ? Number(ratio[1]) / Number(ratio[2]) : Number(text);
  if (text !== '' && Number.isFinite(number) && number > 0 && number < 1) return number;
  if (Number.isInteger(number) && number >= 1) return countWithin('--min-epochs', countLimits.epochs)(String(number));
  throw new InvalidArgumentError(`--min-epochs takes whole epochs, or a share of one pass below 1 such as 0.25 or 1/9, got "${value}"`);
}

function scoreText(run: TrialRun): string {
  return Number.isFinite(run.score) ? run.score.toFixed(4) : run.status;
}

/** A trial's settings in a line: "2 x 64 units, lr 0.0031 onecycle, batch 32, decay 0.0001". */
export function describeTrial(config: TrialConfig, kind: DataKind): string {
  const layers = kind === 'image'
    ? `${config.depth} conv block${config.depth === 1 ? '' : 's'} from ${config.width} filters`
    : `${config.depth} x ${config.width} units`;
  const decay = config.weightDecay > 0 ? `decay ${config.weightDecay}` : 'no decay';
  const augment = config.augment !== 'none' ? `, augment ${config.augment}` : '';
  return `${layers}, lr ${config.lr} ${config.schedule}, batch ${config.batchSize}, ${decay}${augment}`;
}

function searchReport(result: SearchOutcome, out: string): string {
  const measure = result.outcome.plan.task === 'regression' ? 'val R2' : 'val acc';
  const ending = result.outOfTime ? 'search stopped by its time budget' : result.cancelled ? 'search stopped early' : 'search done';
  const lines = [`${ending} in ${durationText(result.seconds)}: ${counted(result.runs.length, 'trial run')}`, '', 'leaderboard (each trial\'s best run, the best validation score first):'];
  lines.push(`  rank  trial  epochs  ${measure.padEnd(7)} settings`);
  for (const [index, run] of result.leaderboard.slice(0, 10).entries()) {
    lines.push(`  ${String(index + 1).padStart(4)}  ${String(run.config.trial).padStart(5)}  ${epochsShort(run.epochs).padStart(6)}  ${scoreText(run).padEnd(7)} ${describeTrial(run.config, result.kind)}`);
  }
  if (result.leaderboard.length > 10) lines.push(`  ... ${result.leaderboard.length - 10} more`);
  const test = result.outcome.test;
  if (test) {
    lines.push('', `the best trial (${result.best.config.trial}) on the test set (${result.outcome.plan.testCount} examples), evaluated once:`);
    lines.push(test.regression ? formatRegressionReport(test.regression, test.loss) : formatReport(test.report, test.loss));
  }
  lines.push('', `saved the best model to ${out}`);
  if (result.best.runId) lines.push(`its run: ${result.best.runId} (nnstudio runs show ${result.best.runId})`);
  return lines.join('\n');
}

function durationText(seconds: number): string {
  return seconds < 60 ? `${seconds.toFixed(1)} s` : formatDuration(seconds);
}

function searchJson(result: SearchOutcome, out: string) {
  const test = result.outcome.test;
  return {
    cancelled: result.cancelled,
    outOfTime: result.outOfTime,
    seconds: result.seconds,
    kind: result.kind,
    space: result.space,
    rungs: result.rungs,
    model: path.resolve(out),
    best: result.best,
    leaderboard: result.leaderboard,
    runs: result.runs,
    test: test ? { loss: test.loss, ...(test.regression ?? test.report) } : null,
  };
}
