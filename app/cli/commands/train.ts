// `nnstudio train`: load data, build the model, train with a progress bar, report test metrics, save.
// With --checkpoint a checkpoint is written after every epoch; --resume continues one exactly. Both go through
// the services' one training path, which also records the run in the run history (unless --no-history).
import * as path from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { normalizationKinds, type NormalizationKind } from '../../core/data/preprocess';
import { lossNames } from '../../core/model/spec';
import type { ModelChoice } from '../../services/modelSpecs';
import type { ClassWeights } from '../../services/trainingSetup';
import { services, type ResumeRequest, type TrainEvent, type TrainOutcome, type TrainRequest } from '../../services';
import { formatDuration, renderProgressBar, TerminalProgress } from '../progressBar';
import { countLimits } from '../../core/model/countLimits';
import { precisionLabel } from '../../core/model/precisionLabel';
import { addDataOptions, checkOutputPath, presetHelp, countWithin, dataSourceFrom, fraction, positiveNumber, precisionOption, threadCount, type DataOptions } from '../options';
import type { Precision } from '../../core/model/precision';
import { formatRegressionReport, formatReport } from '../report';
import type { EarlyStopping, LrSchedule } from '../../engine';
import type { EpochProgress } from '../../core/model/trainingTypes';
import { defaultImputation, imputationStrategies, type ImputationSetting, type ImputationSettings, type ImputationStrategy } from '../../core/data/imputation';
import { parseEarlyStop, parseLrSchedule } from '../trainControl';
import { emaSchema, parseAugmentation, type Augmentation } from '../../core/model/trainingControl';
import { parseGpuChoice, type GpuChoice } from '../../core/model/gpuChoice';
import { untilInterrupted } from '../interrupt';

interface TrainCommandOptions extends DataOptions, Omit<ModelChoice, 'seed'> {
  testData?: string;
  epochs?: number;
  batchSize?: number;
  valSplit?: number;
  testSplit?: number;
  seed: number;
  normalize?: NormalizationKind;
  device: 'auto' | 'cpu' | 'cuda';
  threads?: number;
  out: string;
  json?: boolean;
  verbose?: boolean;
  checkpoint?: string;
  resume?: string;
  lrSchedule?: LrSchedule;
  earlyStop?: EarlyStopping;
  restoreBest?: boolean;
  classWeight?: ClassWeights;
  decoupledDecay?: boolean;
  augment?: Augmentation;
  ema?: number;
  gpus?: GpuChoice;
  precision?: Precision;
  impute?: ImputationStrategy;
  imputeColumn: Record<string, ImputationSetting>;
  missingIndicator?: boolean;
  /** false with --no-history: the run is not recorded in the run history. */
  history: boolean;
}

export function trainCommand(): Command {
  const command = new Command('train').description('train a model and save it (default: a small CNN on the built-in MNIST)');
  addDataOptions(command, 'training data: a CSV file, an image folder (one subfolder per class), an IDX images file, or "mnist" (default: mnist)');
  return command
    .option('--test-data <source>', 'separate test data (default: MNIST\'s test images, or --test-split of the data)')
    .option('--layers <spec>', 'layers in the compact syntax of docs/LAYERS.md, e.g. conv:16x3:relu,maxpool:2,dense:10')
    .option('--preset <name>', `a built-in model by name, or by its older name in brackets: ${presetHelp()}`)
    .addOption(new Option('--loss <loss>', 'loss function').choices(lossNames))
    .addOption(new Option('--optimizer <kind>', 'optimizer (adamw: Adam with decoupled weight decay)').choices(['sgd', 'adam', 'adamw']))
    .option('--lr <rate>', 'learning rate', positiveNumber('--lr'))
    .option('--momentum <m>', 'SGD momentum', fraction('--momentum'))
    .option('--nesterov', 'SGD: Nesterov momentum (needs --momentum above 0)')
    .option('--weight-decay <lambda>', 'weight decay on the weights (not biases): added to the gradient as lambda * w (sgd, adam), decoupled for adamw', nonNegativeNumber('--weight-decay'))
    .option('--decoupled-decay', 'SGD: decouple the weight decay from the gradient (w -= lr * lambda * w, SGDW)')
    .option('--label-smoothing <s>', 'softmax cross-entropy: smooth the one-hot targets by s (0 to 0.5)', fractionAtMost('--label-smoothing', 0.5))
    .option('--augment <items>', 'images: augment each training batch on the device, e.g. translate=2,rotate=10,scale=0.1,erase=0.25,flip (flip is off unless named)', parseAugmentationOption)
    .option('--ema <decay>', 'keep a weight average with this decay (e.g. 0.999) for validation and as the saved model', emaOption)
    .addOption(precisionOption())
    .option('--gpus <which>', 'CUDA: train on several GPUs data-parallel: all, a count (2: the first two) or GPU numbers such as 0,1 (needs NCCL; a run too short for them to pay stays on one: docs/ARCHITECTURE.md)', gpusOption)
    .addOption(new Option('--impute <strategy>', 'CSV: how missing cells are filled, fitted on the training split (default iterative: estimated from the row\'s other columns)').choices(imputationStrategies))
    .option('--impute-column <column=strategy[:value]>', 'CSV: another strategy for one column (repeatable), e.g. age=median or code=constant:-1', collectImputeColumn, {})
    .option('--missing-indicator', 'CSV: add a <column>_missing feature (1 where the cell was missing) for columns with missing cells')
    .option('--class-weight <weights>', 'classification: "balanced" (n / (classes * n_class)) or one weight per class, comma-separated', parseClassWeight)
    .option('--epochs <n>', 'epochs (default: the preset\'s, 2 for images, 200 for tabular data)', countWithin('--epochs', countLimits.epochs))
    .option('--batch-size <n>', 'mini-batch size', countWithin('--batch-size', countLimits.batchSize))
    .option('--val-split <f>', 'fraction of the training data held out for validation', fraction('--val-split'))
    .option('--test-split <f>', 'fraction held out for testing when there is no test data', fraction('--test-split'))
    .option('--seed <n>', 'seed for weights, splits and data order', countWithin('--seed', countLimits.seed), 0)
    .addOption(new Option('--normalize <kind>', 'feature normalisation (default: none for images, zscore otherwise)').choices(normalizationKinds))
    .addOption(new Option('--device <device>', 'where to train').choices(['auto', 'cpu', 'cuda']).default('auto'))
    .option('--threads <n>', 'CPU threads (default: all)', countWithin('--threads', threadCount))
    .option('--lr-schedule <schedule>', 'constant, step:<everyEpochs>:<gamma>, cosine[:<minLr>] or onecycle[:<maxLr>[:<pctStart>]]', parseLrSchedule)
    .option('--early-stop <monitor>', 'stop when val_loss, val_accuracy or train_loss stops improving: <monitor>[:patience[:minDelta]] (patience 3)', parseEarlyStop)
    .option('--restore-best', 'with --early-stop: keep the best epoch\'s weights')
    .option('--checkpoint <file>', 'write a checkpoint (model + optimizer state + training state) here after every epoch')
    .option('--resume <file>', 'continue the run of a checkpoint exactly (its data, model and settings); --epochs is the new total')
    .option('--out <file>', 'where to save the model', 'model.safetensors')
    .option('--json', 'print one JSON object with the result instead of text')
    .option('--verbose', 'print a line per epoch even on a terminal')
    .option('--no-history', 'do not record the run in the run history (nnstudio runs)')
    .action(async (options: TrainCommandOptions) => runTrain(options));
}

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;

/** Progress on stderr: a redrawn bar on a terminal, a line per epoch otherwise, nothing with --json. */
function progressReporter(options: TrainCommandOptions) {
  const stream = process.stderr;
  const terminal = stream.isTTY && !options.json ? new TerminalProgress(stream) : undefined;
  let epochs = 0;
  return {
    onEvent(event: TrainEvent) {
      if (options.json) return;
      if (event.type === 'plan') {
        const plan = event.plan;
        epochs = plan.epochs;
        const predicts = plan.task === 'regression'
          ? `regression of ${(plan.targetNames ?? []).join(', ')}`
          : `${plan.classLabels.length} classes`;
        stream.write(
          `training on ${plan.dataDescription}: ${plan.trainCount} examples (${plan.validationCount} validation, ` +
            `${plan.testCount} test), ${predicts}, ${plural(plan.epochs, 'epoch')} of batch ${plan.batchSize} on ${plan.device}${plan.device === 'cuda' && plan.precision ? ` (${precisionLabel(plan.precision)} convolutions)` : ''}\n`,
        );
        if (plan.resumedFrom) stream.write(`resuming ${options.resume} after epoch ${plan.resumedFrom.epoch}\n`);
        for (const note of plan.notes ?? []) stream.write(`note: ${note}\n`);
      } else if (event.type === 'step' && terminal) {
        terminal.update(renderProgressBar({ ...event, epochs }));
      } else if (event.type === 'epoch') {
        const line = `epoch ${event.epoch}/${epochs}  lr ${event.learningRate.toPrecision(3)}  ${epochFigures(event)}  ${event.seconds.toFixed(1)} s`;
        if (terminal) terminal.log(line);
        else stream.write(`${line}\n`);
      }
    },
    done() {
      terminal?.clear();
    },
  };
}

/** Loss and accuracy, or for a regression run loss and R² (and the validation MAE). */
function epochFigures(event: EpochProgress): string {
  const percent = (value: number | undefined) => `${((value ?? 0) * 100).toFixed(2)} %`;
  if (event.trainR2 !== undefined) {
    const validation = event.validationLoss !== undefined
      ? `  val loss ${event.validationLoss.toFixed(4)}  val R² ${(event.validationR2 ?? 0).toFixed(4)}  val MAE ${(event.validationMae ?? 0).toPrecision(4)}`
      : '';
    return `loss ${event.trainLoss.toFixed(4)}  R² ${event.trainR2.toFixed(4)}${validation}`;
  }
  const validation = event.validationLoss !== undefined
    ? `  val loss ${event.validationLoss.toFixed(4)}  val acc ${percent(event.validationAccuracy)}`
    : '';
  return `loss ${event.trainLoss.toFixed(4)}  acc ${percent(event.trainAccuracy)}${validation}`;
}

// What --resume takes from the checkpoint instead: giving it again would be ignored, so it is an error.
const fixedByCheckpoint: [keyof TrainCommandOptions, string][] = [
  ['data', '--data'], ['classNames', '--class-names'], ['testData', '--test-data'], ['layers', '--layers'], ['preset', '--preset'], ['loss', '--loss'],
  ['optimizer', '--optimizer'], ['lr', '--lr'], ['momentum', '--momentum'], ['batchSize', '--batch-size'],
  ['valSplit', '--val-split'], ['testSplit', '--test-split'], ['normalize', '--normalize'], ['lrSchedule', '--lr-schedule'],
  ['earlyStop', '--early-stop'], ['restoreBest', '--restore-best'], ['weightDecay', '--weight-decay'], ['classWeight', '--class-weight'],
  ['nesterov', '--nesterov'], ['decoupledDecay', '--decoupled-decay'], ['labelSmoothing', '--label-smoothing'], ['augment', '--augment'], ['ema', '--ema'],
  ['impute', '--impute'], ['missingIndicator', '--missing-indicator'], ['precision', '--precision'],
];

function parseAugmentationOption(text: string): Augmentation {
  try {
    return parseAugmentation(text);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message.replace(/^--augment: /, ''));
  }
}

function gpusOption(text: string): GpuChoice {
  try {
    return parseGpuChoice(text);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

function emaOption(text: string): number {
  const value = Number(text);
  if (!emaSchema.safeParse(value).success) throw new InvalidArgumentError(`--ema takes a decay between 0 and 1 (e.g. 0.999), got "${text}"`);
  return value;
}

function fractionAtMost(flag: string, most: number): (text: string) => number {
  return (text) => {
    const value = Number(text);
    if (!(value >= 0 && value <= most)) throw new InvalidArgumentError(`${flag} takes a number from 0 to ${most}, got "${text}"`);
    return value;
  };
}

/** `age=median`, `code=constant:-1`: one column's imputation, gathered over repeated flags. */
function collectImputeColumn(text: string, gathered: Record<string, ImputationSetting>): Record<string, ImputationSetting> {
  const match = /^(.+?)=([a-z_]+)(?::(.+))?$/.exec(text.trim());
  const strategy = match?.[2] as ImputationStrategy | undefined;
  if (!match || !strategy || !imputationStrategies.includes(strategy)) {
    throw new Error(`--impute-column takes column=strategy[:value] with a strategy of ${imputationStrategies.join(', ')}, got "${text}"`);
  }
  const value = match[3] !== undefined ? Number(match[3]) : undefined;
  if (value !== undefined && (strategy !== 'constant' || !Number.isFinite(value))) {
    throw new Error(`--impute-column "${text}": only constant takes a value, and it must be a number`);
  }
  return { ...gathered, [match[1].trim()]: { strategy, ...(value !== undefined ? { fillValue: value } : {}) } };
}

function imputationSettings(options: TrainCommandOptions): ImputationSettings {
  const indicator = options.missingIndicator ?? false;
  const columns = Object.fromEntries(Object.entries(options.imputeColumn).map(([name, setting]) => [name, { ...setting, indicator }]));
  return { default: { strategy: options.impute ?? defaultImputation.default.strategy, indicator }, columns };
}

function nonNegativeNumber(flag: string) {
  return (text: string): number => {
    const value = Number(text);
    if (text.trim() === '' || !Number.isFinite(value) || value < 0) throw new Error(`${flag} must be a number of at least 0, got "${text}"`);
    return value;
  };
}

/** "balanced" or positive weights, one per class in the classes' order. */
function parseClassWeight(text: string): ClassWeights {
  if (text.trim().toLowerCase() === 'balanced') return 'balanced';
  const weights = text.split(',').map((part) => Number(part));
  if (weights.some((weight, i) => !(weight > 0) || !Number.isFinite(weight) || text.split(',')[i].trim() === '')) {
    throw new Error(`--class-weight must be "balanced" or positive numbers separated by commas, got "${text}"`);
  }
  return weights;
}

async function runTrain(options: TrainCommandOptions): Promise<void> {
  checkFlags(options);
  // The data is read before the progress display starts (a bad file is reported on a clean line).
  const request = options.resume === undefined ? await newRunRequest(options) : resumeRequest(options, options.resume);
  const reporter = progressReporter(options);
  // A continued run (--resume) is recorded with the request rebuilt from its checkpoint.
  const history = options.history ? { history: { store: services.runs.store() } } : {};
  const outcome = await untilInterrupted((signal) => services.training.train(request, { onEvent: (event) => reporter.onEvent(event), signal, ...history }), 'after this step')
    .finally(() => reporter.done());

  await services.models.save(options.out, outcome.model);
  if (outcome.savedRun?.error !== undefined) {
    process.stderr.write(`warning: the run was not recorded in the run history: ${outcome.savedRun.error}${options.json ? '' : ' (--no-history skips it)'}\n`);
  }
  report(outcome, options, outcome.savedRun?.runId);
  if (outcome.status === 'diverged') process.exitCode = 3;
  else if (outcome.status === 'cancelled') process.exitCode = 130;
}

function checkFlags(options: TrainCommandOptions): void {
  checkOutputPath(options.out);
  if (options.checkpoint !== undefined) checkOutputPath(options.checkpoint, '--checkpoint');
  if (options.restoreBest && !options.earlyStop && !options.resume) throw new Error('--restore-best needs --early-stop');
  if (options.resume !== undefined) {
    const given = fixedByCheckpoint.filter(([key]) => options[key] !== undefined).map(([, flag]) => flag);
    if (given.length > 0) throw new Error(`--resume continues the checkpoint's run as it was: leave out ${given.join(', ')}`);
  }
}

function resumeRequest(options: TrainCommandOptions, checkpoint: string): ResumeRequest {
  return {
    resumeFrom: checkpoint, epochs: options.epochs, device: options.device, threads: options.threads, checkpointPath: options.checkpoint,
    ...(options.gpus ? { gpus: options.gpus } : {}),
  };
}

async function newRunRequest(options: TrainCommandOptions): Promise<TrainRequest> {
  const data = await dataSourceFrom(options.data ?? 'mnist', 'train', options);
  // The test data is read with the training data's classes, names included (its own labels map to them).
  const testData = options.testData !== undefined ? await dataSourceFrom(options.testData, 'test', { ...options, limit: undefined, classNames: undefined }) : undefined;
  return {
    data,
    testData,
    model: {
      layers: options.layers, preset: options.preset, loss: options.loss, optimizer: options.optimizer,
      lr: options.lr, momentum: options.momentum, weightDecay: options.weightDecay,
      ...(options.nesterov ? { nesterov: true } : {}),
      ...(options.decoupledDecay ? { decoupledWeightDecay: true } : {}),
      ...(options.labelSmoothing !== undefined ? { labelSmoothing: options.labelSmoothing } : {}),
    },
    normalize: options.normalize,
    epochs: options.epochs,
    batchSize: options.batchSize,
    valSplit: options.valSplit,
    testSplit: options.testSplit,
    seed: options.seed,
    device: options.device,
    threads: options.threads,
    lrSchedule: options.lrSchedule,
    ...(options.classWeight !== undefined ? { classWeights: options.classWeight } : {}),
    ...(options.augment ? { augment: options.augment } : {}),
    ...(options.ema !== undefined ? { ema: options.ema } : {}),
    ...(options.gpus ? { gpus: options.gpus } : {}),
    ...(options.precision ? { precision: options.precision } : {}),
    imputation: imputationSettings(options),
    earlyStopping: options.earlyStop && { ...options.earlyStop, restoreBest: options.restoreBest ?? false },
    checkpointPath: options.checkpoint,
  };
}

function report(outcome: TrainOutcome, options: TrainCommandOptions, runId: string | undefined): void {
  const training = outcome.model.training!;
  if (options.json) {
    process.stdout.write(`${JSON.stringify({
      status: outcome.status,
      message: outcome.message,
      model: path.resolve(options.out),
      runId: runId ?? null,
      device: training.device,
      seconds: training.seconds,
      epochs: outcome.plan.epochs,
      batchSize: outcome.plan.batchSize,
      history: training.history,
      stoppedEarly: outcome.stoppedEarly,
      bestEpoch: outcome.bestEpoch ?? null,
      checkpoint: outcome.checkpointPath ? path.resolve(outcome.checkpointPath) : null,
      test: outcome.test ? { loss: outcome.test.loss, ...(outcome.test.regression ?? outcome.test.report) } : null,
    })}\n`);
    return;
  }
  if (outcome.message) process.stderr.write(`${outcome.message}\n`);
  for (const note of outcome.notes) process.stderr.write(`note: ${note}\n`);
  const lines = [`trained for ${formatDuration(training.seconds)} on ${training.device}`];
  if (outcome.test) {
    const { regression, report: classes, loss } = outcome.test;
    lines.push('', `test set (${outcome.plan.testCount} examples):`, regression ? formatRegressionReport(regression, loss) : formatReport(classes, loss));
  }
  lines.push('', `saved ${outcome.status === 'diverged' ? 'the last good weights' : 'the model'} to ${options.out}`);
  if (runId) lines.push(`recorded as run ${runId} (nnstudio runs show ${runId})`);
  process.stdout.write(`${lines.join('\n')}\n`);
}
