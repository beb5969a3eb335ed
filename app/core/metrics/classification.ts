// Classification metrics from true labels and predictions: the one implementation every face shows
// (the Evaluate screen, `eval --json`, metrics stored in model files).
// Conventions follow scikit-learn's classification_report with labels=range(K) and zero_division=0:
// a class never predicted has precision 0, a class with no support has recall 0, f1 is 0 when
// precision + recall is 0, and the macro average runs over all K classes, supported or not.
import { z } from 'zod';

export interface AveragedMetrics {
  precision: number;
  recall: number;
  f1: number;
}

export interface ClassMetrics extends AveragedMetrics {
  label: string;
  /** Number of samples whose true class is this one. */
  support: number;
}

export interface ClassificationReport {
  accuracy: number;
  macro: AveragedMetrics;
  /** Averages weighted by support. */
  weighted: AveragedMetrics;
  perClass: ClassMetrics[];
  /** confusion[trueClass][predictedClass] = count. */
  confusion: number[][];
  labels: string[];
}

const averagedSchema = z.strictObject({ precision: z.number(), recall: z.number(), f1: z.number() });
export const classificationReportSchema = z.strictObject({
  accuracy: z.number(),
  macro: averagedSchema,
  weighted: averagedSchema,
  perClass: z.array(averagedSchema.extend({ label: z.string(), support: z.number().int().nonnegative() })),
  confusion: z.array(z.array(z.number().int().nonnegative())),
  labels: z.array(z.string()),
});

function ratio(numerator: number, denominator: number): number {
  return denominator === 0 ? 0 : numerator / denominator;
}

/** confusion[t][p]: how many samples of true class t were predicted as p. */
export function confusionMatrix(
  trueLabels: ArrayLike<number>,
  predictions: ArrayLike<number>,
  classCount: number,
): number[][] {
  if (!Number.isInteger(classCount) || classCount < 1) throw new Error(`class count ${classCount} must be a positive integer`);
  if (trueLabels.length !== predictions.length) {
    throw new Error(`${trueLabels.length} labels but ${predictions.length} predictions`);
  }
  const confusion = Array.from({ length: classCount }, () => new Array<number>(classCount).fill(0));
  for (let i = 0; i < trueLabels.length; i++) {
    const truth = trueLabels[i];
    const predicted = predictions[i];
    if (!Number.isInteger(truth) || truth < 0 || truth >= classCount) {
      throw new Error(`label ${truth} at sample ${i} is outside 0..${classCount - 1}`);
    }
    if (!Number.isInteger(predicted) || predicted < 0 || predicted >= classCount) {
      throw new Error(`prediction ${predicted} at sample ${i} is outside 0..${classCount - 1}`);
    }
    confusion[truth][predicted]++;
  }
  return confusion;
}

/**
 * Accuracy, per-class precision / recall / f1 / support, macro and weighted averages and the confusion
 * matrix. `classLabels` names the classes (default "0".."K-1"). Never NaN: empty input gives zeros.
 */
export function classificationReport(
  trueLabels: ArrayLike<number>,
  predictions: ArrayLike<number>,
  classCount: number,
  classLabels?: readonly string[],
): ClassificationReport {
  const labels = classLabels ? [...classLabels] : Array.from({ length: classCount }, (_, k) => String(k));
  if (labels.length !== classCount) throw new Error(`${labels.length} class labels for ${classCount} classes`);
  const confusion = confusionMatrix(trueLabels, predictions, classCount);
  const total = trueLabels.length;

  let correct = 0;
  const perClass: ClassMetrics[] = labels.map((label, k) => {
    const truePositives = confusion[k][k];
    correct += truePositives;
    const support = confusion[k].reduce((sum, count) => sum + count, 0);
    const predicted = confusion.reduce((sum, row) => sum + row[k], 0);
    const precision = ratio(truePositives, predicted);
    const recall = ratio(truePositives, support);
    const f1 = ratio(2 * precision * recall, precision + recall);
    return { label, precision, recall, f1, support };
  });

  const average = (weight: (c: ClassMetrics) => number): AveragedMetrics => {
    const weights = perClass.reduce((sum, c) => sum + weight(c), 0);
    const mean = (pick: (c: ClassMetrics) => number) =>
      ratio(perClass.reduce((sum, c) => sum + weight(c) * pick(c), 0), weights);
    return { precision: mean((c) => c.precision), recall: mean((c) => c.recall), f1: mean((c) => c.f1) };
  };

  return {
    accuracy: ratio(correct, total),
    macro: average(() => 1),
    weighted: average((c) => c.support),
    perClass,
    confusion,
    labels,
  };
}

/** The report of a model without classes (regression): every figure 0, no classes, no matrix. */
export function emptyClassificationReport(): ClassificationReport {
  const zero = { precision: 0, recall: 0, f1: 0 };
  return { accuracy: 0, macro: { ...zero }, weighted: { ...zero }, perClass: [], confusion: [], labels: [] };
}
