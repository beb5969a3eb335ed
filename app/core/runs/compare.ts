// Two saved runs side by side: their metrics with the difference (second minus first), the settings that
// tell them apart, and their per-epoch history aligned by epoch. `nnstudio runs compare` prints this.
import type { EpochRecord } from '../model/modelFile';
import { parameterCount } from '../model/shapes';
import { modelSummary, type RunRecord } from './runFile';

/** 'higher' or 'lower' is better; 'neither' for facts such as the parameter count. */
export type Better = 'higher' | 'lower' | 'neither';

export interface MetricRow {
  name: string;
  first: number | null;
  second: number | null;
  /** second − first; null when either is missing. */
  difference: number | null;
  better: Better;
  kind: 'percent' | 'decimal' | 'count' | 'seconds';
}

export interface SettingRow {
  name: string;
  first: string;
  second: string;
  same: boolean;
}

export interface EpochPair {
  epoch: number;
  first: EpochRecord | null;
  second: EpochRecord | null;
}

export interface RunComparison {
  first: { id: string; name: string };
  second: { id: string; name: string };
  metrics: MetricRow[];
  settings: SettingRow[];
  history: EpochPair[];
}

const finite = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);
const lastEpoch = (record: RunRecord): EpochRecord | undefined => record.history[record.history.length - 1];

export function compareRuns(first: RunRecord, second: RunRecord): RunComparison {
  const metric = (name: string, pick: (record: RunRecord) => unknown, better: Better, kind: MetricRow['kind']): MetricRow => {
    const a = finite(pick(first));
    const b = finite(pick(second));
    return { name, first: a, second: b, difference: a !== null && b !== null ? b - a : null, better, kind };
  };
  const setting = (name: string, pick: (record: RunRecord) => unknown): SettingRow => {
    const text = (record: RunRecord) => {
      const value = pick(record);
      return value === undefined || value === null ? '–' : typeof value === 'object' ? JSON.stringify(value) : String(value);
    };
    return { name, first: text(first), second: text(second), same: text(first) === text(second) };
  };

  const epochs = Math.max(first.history.length, second.history.length);
  const byEpoch = (record: RunRecord, epoch: number) => record.history.find((entry) => entry.epoch === epoch) ?? null;
  return {
    first: { id: first.id, name: first.name },
    second: { id: second.id, name: second.name },
    metrics: [
      metric('test accuracy', (record) => record.test?.report.accuracy, 'higher', 'percent'),
      metric('test loss', (record) => record.test?.loss, 'lower', 'decimal'),
      metric('test macro F1', (record) => record.test?.report.macro.f1, 'higher', 'decimal'),
      metric('test weighted F1', (record) => record.test?.report.weighted.f1, 'higher', 'decimal'),
      metric('test R²', (record) => record.test?.regression?.r2, 'higher', 'decimal'),
      metric('test MAE', (record) => record.test?.regression?.mae, 'lower', 'decimal'),
      metric('final validation accuracy', (record) => lastEpoch(record)?.validationAccuracy, 'higher', 'percent'),
      metric('final validation loss', (record) => lastEpoch(record)?.validationLoss, 'lower', 'decimal'),
      metric('final training accuracy', (record) => lastEpoch(record)?.trainAccuracy, 'higher', 'percent'),
      metric('final training loss', (record) => lastEpoch(record)?.trainLoss, 'lower', 'decimal'),
      metric('epochs', (record) => record.history.length, 'neither', 'count'),
      metric('parameters', (record) => parameterCount(record.spec), 'neither', 'count'),
      metric('training time', (record) => record.seconds, 'lower', 'seconds'),
    ],
    settings: [
      setting('status', (record) => record.status),
      setting('data', (record) => record.data.description),
      setting('model', (record) => modelSummary(record.spec, record.options.preset, 80)),
      setting('loss', (record) => record.spec.loss),
      setting('optimizer', (record) => record.options.optimizer),
      setting('learning rate', (record) => record.options.lr),
      setting('batch size', (record) => record.options.batchSize),
      setting('epochs asked', (record) => record.options.epochs),
      setting('seed', (record) => record.options.seed),
      setting('normalisation', (record) => record.options.normalize),
      setting('device', (record) => record.options.deviceName),
      setting('train / validation / test', (record) => `${record.data.trainCount} / ${record.data.validationCount} / ${record.data.testCount}`),
    ],
    history: Array.from({ length: epochs }, (_, index) => ({ epoch: index + 1, first: byEpoch(first, index + 1), second: byEpoch(second, index + 1) })),
  };
}
