// `nnstudio train`'s training-control flags: --lr-schedule and --early-stop, parsed into the engine's
// schedule and early-stopping settings (commander argument parsers: a bad value is a usage error).
import { InvalidArgumentError } from 'commander';
import { countLimits, countRange, isCountWithin } from '../core/model/countLimits';
import type { EarlyStopping, EarlyStoppingMonitor, LrSchedule } from '../engine';

function number(text: string | undefined, what: string, check: (value: number) => boolean): number | undefined {
  if (text === undefined || text === '') return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || !check(value)) throw new InvalidArgumentError(`${what}, got "${text}"`);
  return value;
}

/** constant | step:<everyEpochs>:<gamma> | cosine[:<minLr>] | onecycle[:<maxLr>[:<pctStart>]] */
export function parseLrSchedule(text: string): LrSchedule {
  const [kind, ...args] = text.trim().split(':');
  const usage = 'expected constant, step:<everyEpochs>:<gamma>, cosine[:<minLr>] or onecycle[:<maxLr>[:<pctStart>]]';
  switch (kind) {
    case 'constant':
      if (args.length > 0) break;
      return { kind: 'constant' };
    case 'step': {
      if (args.length !== 2) throw new InvalidArgumentError(`--lr-schedule step needs step:<everyEpochs>:<gamma>, e.g. step:10:0.5`);
      const everyEpochs = number(args[0], `--lr-schedule step: everyEpochs ${countRange(countLimits.epochInterval)}`, (v) => isCountWithin(v, countLimits.epochInterval));
      const gamma = number(args[1], '--lr-schedule step: gamma must be a positive number', (v) => v > 0);
      return { kind: 'step', everyEpochs, gamma };
    }
    case 'cosine': {
      if (args.length > 1) break;
      const minLr = number(args[0], '--lr-schedule cosine: minLr must be a number ≥ 0', (v) => v >= 0);
      return minLr === undefined ? { kind: 'cosine' } : { kind: 'cosine', minLr };
    }
    case 'onecycle': {
      if (args.length > 2) break;
      const maxLr = number(args[0], '--lr-schedule onecycle: maxLr must be a positive number', (v) => v > 0);
      const pctStart = number(args[1], '--lr-schedule onecycle: pctStart must be between 0 and 1', (v) => v > 0 && v < 1);
      return { kind: 'onecycle', ...(maxLr !== undefined ? { maxLr } : {}), ...(pctStart !== undefined ? { pctStart } : {}) };
    }
  }
  throw new InvalidArgumentError(`--lr-schedule "${text}": ${usage}`);
}

const monitors: Record<string, EarlyStoppingMonitor> = {
  val_loss: 'validationLoss', validationLoss: 'validationLoss', 'val-loss': 'validationLoss',
  val_accuracy: 'validationAccuracy', validationAccuracy: 'validationAccuracy', 'val-accuracy': 'validationAccuracy',
  val_acc: 'validationAccuracy',
  train_loss: 'trainLoss', trainLoss: 'trainLoss', 'train-loss': 'trainLoss', loss: 'trainLoss',
};

/** <monitor>[:patience[:minDelta]], monitor: val_loss | val_accuracy | train_loss */
export function parseEarlyStop(text: string): EarlyStopping {
  const [name, patienceText, minDeltaText, ...rest] = text.trim().split(':');
  const monitor = monitors[name];
  if (!monitor || rest.length > 0) {
    throw new InvalidArgumentError(`--early-stop "${text}": expected <monitor>[:patience[:minDelta]] with monitor val_loss, val_accuracy or train_loss`);
  }
  const patience = number(patienceText, `--early-stop: patience ${countRange(countLimits.epochInterval)}`, (v) => isCountWithin(v, countLimits.epochInterval));
  const minDelta = number(minDeltaText, '--early-stop: minDelta must be a number ≥ 0', (v) => v >= 0);
  return { monitor, ...(patience !== undefined ? { patience } : {}), ...(minDelta !== undefined ? { minDelta } : {}) };
}
