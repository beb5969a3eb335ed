// Two runs side by side on the Models screen (which two: ModelsState.compared): their metrics with the
// difference, and their epoch curves overlaid. ModelInfo carries everything: the training
// history and the test metrics travel with the model (also in its file, so imported models compare too).
import type { EpochRecord, ModelInfo } from '../../../app/api/types';
import type { ChartSeries, Point } from './series';

/** 'higher' or 'lower' is better; 'neither' for facts such as the parameter count. */
export type Better = 'higher' | 'lower' | 'neither';

export interface ComparedMetric {
  name: string;
  first: number | undefined;
  second: number | undefined;
  better: Better;
  kind: 'percent' | 'decimal' | 'count' | 'seconds';
}

interface TestMetrics {
  test?: { accuracy?: unknown; macro?: { f1?: unknown } };
  testLoss?: unknown;
}

const numberOr = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);
const lastEpoch = (model: ModelInfo): EpochRecord | undefined => model.training?.history[model.training.history.length - 1];

export function comparedMetrics(first: ModelInfo, second: ModelInfo): ComparedMetric[] {
  const row = (name: string, pick: (model: ModelInfo) => unknown, better: Better, kind: ComparedMetric['kind']): ComparedMetric => ({
    name,
    first: numberOr(pick(first)),
    second: numberOr(pick(second)),
    better,
    kind,
  });
  const metrics = (model: ModelInfo) => (model.metrics ?? {}) as TestMetrics;
  return [
    row('Test accuracy', (model) => metrics(model).test?.accuracy, 'higher', 'percent'),
    row('Test loss', (model) => metrics(model).testLoss, 'lower', 'decimal'),
    row('Test macro F1', (model) => metrics(model).test?.macro?.f1, 'higher', 'decimal'),
    row('Final validation accuracy', (model) => lastEpoch(model)?.validationAccuracy, 'higher', 'percent'),
    row('Final validation loss', (model) => lastEpoch(model)?.validationLoss, 'lower', 'decimal'),
    row('Final training loss', (model) => lastEpoch(model)?.trainLoss, 'lower', 'decimal'),
    row('Parameters', (model) => model.parameterCount, 'neither', 'count'),
    row('Epochs', (model) => model.training?.history.length, 'neither', 'count'),
    row('Training time', (model) => model.training?.seconds, 'lower', 'seconds'),
  ];
}

/** Whether the second run did better (+1), worse (-1) or neither (0) on this metric. */
export function verdict(metric: ComparedMetric): -1 | 0 | 1 {
  if (metric.first === undefined || metric.second === undefined || metric.better === 'neither' || metric.first === metric.second) return 0;
  const higher = metric.second > metric.first;
  return (metric.better === 'higher') === higher ? 1 : -1;
}

type EpochKey = 'trainLoss' | 'validationLoss' | 'trainAccuracy' | 'validationAccuracy';

function epochPoints(model: ModelInfo, key: EpochKey): Point[] {
  const points: Point[] = [];
  for (const epoch of model.training?.history ?? []) {
    const value = epoch[key];
    if (value !== undefined && value !== null && Number.isFinite(value)) points.push({ x: epoch.epoch, y: value });
  }
  return points;
}

/** Both runs' train and validation curves of one quantity: a colour per run, dashed for training. */
export function overlaidSeries(first: ModelInfo, second: ModelInfo, quantity: 'loss' | 'accuracy'): ChartSeries[] {
  const train: EpochKey = quantity === 'loss' ? 'trainLoss' : 'trainAccuracy';
  const validation: EpochKey = quantity === 'loss' ? 'validationLoss' : 'validationAccuracy';
  return [
    { label: 'first: train', color: '--chart-1', points: epochPoints(first, train), markers: true, dashed: true },
    { label: 'first: validation', color: '--chart-1', points: epochPoints(first, validation), markers: true },
    { label: 'second: train', color: '--chart-2', points: epochPoints(second, train), markers: true, dashed: true },
    { label: 'second: validation', color: '--chart-2', points: epochPoints(second, validation), markers: true },
  ];
}
