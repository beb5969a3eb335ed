// The Model screen's training settings as its inputs hold them (null: an empty input, which leaves the
// server's default), and the functions that turn them into training:start's options. The server's zod
// schemas (app/core/model/trainingControl.ts, app/api/schemas.ts) stay the authority; the bounds checked
// here are theirs, so a bad value is named by its control before any request.
import type { ApiError, EarlyStopping, EarlyStoppingMonitor, LrSchedule, PayloadOf, PresetInfo } from '../../../../app/api/types';
import type { Precision } from '../../../../app/core/model/precision';

/** core/model/precision.ts's defaultGpuPrecision (this module loads in the unit tests with type imports alone). */
export const gpuDefaultPrecision: Precision = 'mixed';

export type Device = 'auto' | 'cpu' | 'cuda';
export type LrScheduleKind = LrSchedule['kind'];

/** Every schedule's settings at once: switching the kind back and forth keeps what was typed. */
export interface LrScheduleDraft {
  kind: LrScheduleKind;
  /** step: decay every this many epochs, by this factor. */
  everyEpochs: number | null;
  gamma: number | null;
  /** cosine: the final learning rate. */
  minLr: number | null;
  /** onecycle: the peak (empty: the learning rate is the peak), the warm-up share and the two divisors. */
  maxLr: number | null;
  pctStart: number | null;
  divFactor: number | null;
  finalDivFactor: number | null;
}

export interface EarlyStoppingDraft {
  monitor: 'off' | EarlyStoppingMonitor;
  patience: number | null;
  minDelta: number | null;
  restoreBest: boolean;
}

/** Augmentation of image batches as the inputs hold it (null or 0: that kind off). */
export interface AugmentDraft {
  translate: number | null;
  flip: boolean;
  rotate: number | null;
  scale: number | null;
  erase: number | null;
}

export interface TrainingDraft {
  batchSize: number | null;
  epochs: number | null;
  device: Device;
  schedule: LrScheduleDraft;
  earlyStopping: EarlyStoppingDraft;
  augment: AugmentDraft;
  /** The weight average's decay; null: none. */
  ema: number | null;
  /** The GPUs to train on when the machine has several; fewer than two: the first GPU alone. */
  gpus: number[];
  /** The GPU's tensor-core products' arithmetic (the CPU computes in FP32). */
  precision: Precision;
}

type StartPayload = PayloadOf<'training:start'>;
/** The part of training:start these settings decide. */
export type TrainingOptions = Pick<StartPayload, 'epochs' | 'batchSize' | 'device' | 'lrSchedule' | 'earlyStopping' | 'augment' | 'ema' | 'gpus' | 'precision'>;

export function newTrainingDraft(): TrainingDraft {
  return {
    batchSize: 64,
    epochs: 5,
    device: 'auto',
    schedule: { kind: 'constant', everyEpochs: 10, gamma: 0.5, minLr: 0, maxLr: null, pctStart: 0.3, divFactor: 25, finalDivFactor: 1e4 },
    earlyStopping: { monitor: 'off', patience: 3, minDelta: 0, restoreBest: false },
    augment: { translate: null, flip: false, rotate: null, scale: null, erase: null },
    ema: null,
    gpus: [],
    precision: gpuDefaultPrecision,
  };
}

/**
 * A preset's recipe fills the settings; schedule fields it leaves out keep their values (a one-cycle peak
 * clears). Its augmentation replaces the fieldset's, all of it (none for a preset without one): the editor
 * sends layers, not the preset's name, so the server adds nothing and what the fields show is what trains.
 */
export function adoptPresetTraining(draft: TrainingDraft, training: PresetInfo['training']): void {
  draft.batchSize = training.batchSize;
  draft.epochs = training.epochs;
  Object.assign(draft.augment, augmentDraftOf(training.augment));
  const schedule = training.lrSchedule ?? { kind: 'constant' };
  const target = draft.schedule;
  target.kind = schedule.kind;
  if (schedule.kind === 'step') {
    if (schedule.everyEpochs !== undefined) target.everyEpochs = schedule.everyEpochs;
    if (schedule.gamma !== undefined) target.gamma = schedule.gamma;
  } else if (schedule.kind === 'cosine') {
    if (schedule.minLr !== undefined) target.minLr = schedule.minLr;
  } else if (schedule.kind === 'onecycle') {
    target.maxLr = schedule.maxLr ?? null;
    if (schedule.pctStart !== undefined) target.pctStart = schedule.pctStart;
    if (schedule.divFactor !== undefined) target.divFactor = schedule.divFactor;
    if (schedule.finalDivFactor !== undefined) target.finalDivFactor = schedule.finalDivFactor;
  }
}

/** The fieldset's values for an augmentation (a kind left out: its input empty). */
function augmentDraftOf(augment: PresetInfo['training']['augment']): AugmentDraft {
  return {
    translate: augment?.translate ?? null,
    flip: augment?.flip ?? false,
    rotate: augment?.rotate ?? null,
    scale: augment?.scale ?? null,
    erase: augment?.erase ?? null,
  };
}

// ---- checks: the server's bounds, named by the control ----

type Check = (value: number) => boolean;
interface Bound {
  ok: Check;
  /** What the control needs, after its name: "must be ...". */
  needs: string;
}

const bounds: Record<'wholeFromOne' | 'aboveZeroToMillion' | 'zeroOrMore' | 'aboveZero' | 'share', Bound> & {
  zeroTo(most: number): Bound;
  wholeFromZeroTo(most: number): Bound;
} = {
  wholeFromOne: { ok: (value) => Number.isInteger(value) && value >= 1 && value <= 1_000_000, needs: 'a whole number from 1 to 1,000,000' },
  aboveZeroToMillion: { ok: (value) => value > 0 && value <= 1e6, needs: 'more than 0 and at most 1,000,000' },
  zeroOrMore: { ok: (value) => Number.isFinite(value) && value >= 0, needs: '0 or more' },
  aboveZero: { ok: (value) => Number.isFinite(value) && value > 0, needs: 'more than 0' },
  share: { ok: (value) => value > 0 && value < 1, needs: 'between 0 and 1' },
  zeroTo: (most: number): Bound => ({ ok: (value) => value >= 0 && value <= most, needs: `from 0 to ${most}` }),
  wholeFromZeroTo: (most: number): Bound => ({ ok: (value) => Number.isInteger(value) && value >= 0 && value <= most, needs: `a whole number from 0 to ${most}` }),
};

/** A problem with one typed value, or undefined (an empty input is always fine: the server's default). */
function checkValue(value: number | null, bound: Bound, control: string, field: string): ApiError | undefined {
  if (value === null || bound.ok(value)) return undefined;
  return { message: `${control} must be ${bound.needs} (got ${value})`, field };
}

/** The fields of a draft that are set, as an object (empty inputs are left out). */
function setFields<Key extends string>(values: Record<Key, number | null>): Partial<Record<Key, number>> {
  const set: Partial<Record<Key, number>> = {};
  for (const key of Object.keys(values) as Key[]) {
    const value = values[key];
    if (value !== null) set[key] = value;
  }
  return set;
}

function firstProblem(...problems: (ApiError | undefined)[]): ApiError | undefined {
  return problems.find((problem) => problem !== undefined);
}

// ---- draft -> API values ----

export type Checked<Value> = { value: Value; problem?: undefined } | { problem: ApiError; value?: undefined };

/** training:start's lrSchedule: the chosen kind with the fields typed for it, or the first bad value. */
export function scheduleFromDraft(draft: LrScheduleDraft): Checked<LrSchedule> {
  const field = (name: string) => `lrSchedule.${name}`;
  switch (draft.kind) {
    case 'step': {
      const problem = firstProblem(
        checkValue(draft.everyEpochs, bounds.wholeFromOne, 'Decay every (epochs)', field('everyEpochs')),
        checkValue(draft.gamma, bounds.aboveZeroToMillion, 'Decay factor', field('gamma')),
      );
      return problem ? { problem } : { value: { kind: 'step', ...setFields({ everyEpochs: draft.everyEpochs, gamma: draft.gamma }) } };
    }
    case 'cosine': {
      const problem = checkValue(draft.minLr, bounds.zeroOrMore, 'Final learning rate', field('minLr'));
      return problem ? { problem } : { value: { kind: 'cosine', ...setFields({ minLr: draft.minLr }) } };
    }
    case 'onecycle': {
      const problem = firstProblem(
        checkValue(draft.maxLr, bounds.zeroOrMore, 'Peak learning rate', field('maxLr')),
        checkValue(draft.pctStart, bounds.share, 'Warm-up share', field('pctStart')),
        checkValue(draft.divFactor, bounds.aboveZero, 'Start divisor', field('divFactor')),
        checkValue(draft.finalDivFactor, bounds.aboveZero, 'End divisor', field('finalDivFactor')),
      );
      const { maxLr, pctStart, divFactor, finalDivFactor } = draft;
      return problem ? { problem } : { value: { kind: 'onecycle', ...setFields({ maxLr, pctStart, divFactor, finalDivFactor }) } };
    }
    default:
      return { value: { kind: 'constant' } };
  }
}

/** training:start's earlyStopping: undefined when off, else the monitor with the fields typed, or the first bad value. */
export function earlyStoppingFromDraft(draft: EarlyStoppingDraft): Checked<EarlyStopping | undefined> {
  if (draft.monitor === 'off') return { value: undefined };
  const problem = firstProblem(
    checkValue(draft.patience, bounds.wholeFromOne, 'Patience (epochs)', 'earlyStopping.patience'),
    checkValue(draft.minDelta, bounds.zeroOrMore, 'Minimum improvement', 'earlyStopping.minDelta'),
  );
  if (problem) return { problem };
  return { value: { monitor: draft.monitor, ...setFields({ patience: draft.patience, minDelta: draft.minDelta }), restoreBest: draft.restoreBest } };
}

/** training:start's augment: undefined when every kind is off, else the kinds set, or the first bad value. */
export function augmentFromDraft(draft: AugmentDraft): Checked<StartPayload['augment']> {
  const problem = firstProblem(
    checkValue(draft.translate, bounds.wholeFromZeroTo(64), 'Shift (pixels)', 'augment.translate'),
    checkValue(draft.rotate, bounds.zeroTo(180), 'Rotation (degrees)', 'augment.rotate'),
    checkValue(draft.scale, bounds.zeroTo(0.5), 'Scaling', 'augment.scale'),
    checkValue(draft.erase, bounds.zeroTo(1), 'Erasing probability', 'augment.erase'),
  );
  if (problem) return { problem };
  const set = Object.fromEntries(Object.entries(setFields({ translate: draft.translate, rotate: draft.rotate, scale: draft.scale, erase: draft.erase })).filter(([, value]) => value !== 0));
  const augment = { ...set, ...(draft.flip ? { flip: true } : {}) };
  return { value: Object.keys(augment).length > 0 ? augment : undefined };
}

/** Everything the settings give training:start, or the first bad value. `images`: augmentation applies. */
export function trainingOptions(draft: TrainingDraft, images = false): Checked<TrainingOptions> {
  const schedule = scheduleFromDraft(draft.schedule);
  if (schedule.problem) return schedule;
  const earlyStopping = earlyStoppingFromDraft(draft.earlyStopping);
  if (earlyStopping.problem) return earlyStopping;
  const augment = images ? augmentFromDraft(draft.augment) : { value: undefined };
  if (augment.problem) return augment;
  const emaProblem = checkValue(draft.ema, bounds.share, 'Weight average decay', 'ema');
  if (emaProblem) return { problem: emaProblem };
  return {
    value: {
      ...setFields({ epochs: draft.epochs, batchSize: draft.batchSize }),
      device: draft.device,
      lrSchedule: schedule.value,
      ...(earlyStopping.value ? { earlyStopping: earlyStopping.value } : {}),
      ...(augment.value ? { augment: augment.value } : {}),
      ...(draft.ema !== null ? { ema: draft.ema } : {}),
      // several GPUs train data-parallel; one (or none chosen) is the device's own
      ...(draft.gpus.length > 1 && draft.device !== 'cpu' ? { gpus: [...draft.gpus].sort((a, b) => a - b) } : {}),
      ...askedPrecision(draft.device, draft.precision),
    },
  };
}

/**
 * The GPU arithmetic a start payload (training:start, search:start) asks for: none for the CPU, and none for the
 * server's own default, so that a CPU-only machine's runs (device auto) carry no precision note.
 */
export function askedPrecision(device: Device, precision: Precision): { precision?: Precision } {
  return device !== 'cpu' && precision !== gpuDefaultPrecision ? { precision } : {};
}
