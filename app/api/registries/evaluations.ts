// The session's evaluations by id: evaluation:evaluate keeps each one's per-example outputs (as does a run
// with a test set) for evaluation:examples. Only the last few are kept: MNIST's test set is 31 MB.
import { services } from '../../services';
import type { PredictionSet } from '../../services/examples';
import type { Evaluation, RegressionEvaluation } from '../../services/evaluation';
import type { Dataset } from '../../core/data/dataset';
import type { ParsedPayloadOf } from '../schemas';
import type { CellExamples, EvaluationResult, RegressionResult } from '../types';
import type { DatasetRegistry } from './datasets';
import type { IdSequence } from './ids';
import type { ModelRegistry } from './models';

export interface EvaluationRecord {
  modelId: string;
  predictions: PredictionSet;
}

export const keptEvaluations = 3;
/** The scatter plot's points: enough to see the shape, few enough for the page to draw at once. */
export const maxScatterPoints = 2000;

/** Sets `key`, then forgets the oldest entries beyond keptEvaluations (a Map iterates in insertion order). */
function keepLatest<T>(map: Map<string, T>, key: string, value: T): void {
  map.set(key, value);
  for (const old of map.keys()) {
    if (map.size <= keptEvaluations) break;
    map.delete(old);
  }
}

export class EvaluationRegistry {
  private readonly records = new Map<string, EvaluationRecord>();
  /** The answers of evaluation:evaluate by id, for evaluation:get (a reloaded page shows the same one again). */
  private readonly results = new Map<string, EvaluationResult>();

  constructor(
    private readonly ids: IdSequence,
    private readonly models: ModelRegistry,
    private readonly datasets: DatasetRegistry,
  ) {}

  /** Keeps an evaluation's outputs under a new id, forgetting the oldest beyond keptEvaluations. */
  keep(record: EvaluationRecord): string {
    const id = this.ids.next('evaluation');
    keepLatest(this.records, id, record);
    return id;
  }

  get(id: string): EvaluationRecord {
    const record = this.records.get(id);
    if (!record) throw new Error(`no evaluation with id "${id}" (the session keeps the last ${keptEvaluations}; evaluate again)`);
    return record;
  }

  async evaluate(payload: ParsedPayloadOf<'evaluation:evaluate'>): Promise<EvaluationResult> {
    const result = await this.evaluated(payload);
    keepLatest(this.results, result.evaluationId, result);
    return result;
  }

  /** An answer of evaluation:evaluate again, while the session keeps it. */
  result(evaluationId: string): EvaluationResult {
    const result = this.results.get(evaluationId);
    if (!result) throw new Error(`no evaluation with id "${evaluationId}" (the session keeps the last ${keptEvaluations}; evaluate again)`);
    return result;
  }

  private async evaluated({ modelId, datasetId, device, tta }: ParsedPayloadOf<'evaluation:evaluate'>): Promise<EvaluationResult> {
    const { model } = this.models.get(modelId);
    const data = this.datasets.get(datasetId);
    const evaluation = await services.evaluation.evaluate(model, data.source, { device, ...(tta ? services.evaluation.ttaFor(model) : {}) });
    if (evaluation.regression) return this.regressionResult(evaluation, evaluation.regression, { modelId, datasetId });
    const classes = model.labels.length;
    const confidences = Array.from(evaluation.predictions, (predicted, row) => evaluation.probabilities[row * classes + predicted]);
    const evaluationId = this.keep({
      modelId,
      predictions: {
        classLabels: model.labels,
        inputShape: model.inputShape,
        data: evaluation.rawDataset,
        predictions: evaluation.predictions,
        probabilities: evaluation.probabilities,
      },
    });
    return {
      evaluationId,
      modelId,
      datasetId,
      count: evaluation.dataset.count,
      loss: evaluation.loss,
      report: evaluation.report,
      predictions: Array.from(evaluation.predictions),
      confidences,
    };
  }

  /** A regression evaluation: metrics, a sample of points for the scatter plot, residuals and the worst rows. */
  private regressionResult(evaluation: Evaluation, regression: RegressionEvaluation, ids: { modelId: string; datasetId: string }): EvaluationResult {
    return {
      // an id for evaluation:get only: a regression evaluation has no confusion cells to browse
      evaluationId: this.ids.next('evaluation'), ...ids, count: evaluation.dataset.count, loss: evaluation.loss, report: evaluation.report, predictions: [], confidences: [],
      regression: regressionView(regression, evaluation.rawDataset),
    };
  }

  examples({ evaluationId, ...query }: ParsedPayloadOf<'evaluation:examples'>): CellExamples {
    return services.evaluation.cellExamples(this.get(evaluationId).predictions, query);
  }

  clear(): void {
    this.records.clear();
    this.results.clear();
  }
}

/** What the Evaluate screen draws of a regression evaluation; `raw` is the data as read (the worst rows' features). */
export function regressionView(regression: RegressionEvaluation, raw: Dataset): RegressionResult {
  const width = regression.targetNames.length;
  const count = regression.truth.length / width;
  const step = Math.max(1, Math.ceil(count / maxScatterPoints));
  const scatter: RegressionResult['scatter'] = [];
  for (let row = 0; row < count; row += step) scatter.push({ row, truth: regression.truth[row * width], predicted: regression.predicted[row * width] });
  const rawWidth = raw.features.length / Math.max(1, raw.count);
  const worst = regression.worst.map((entry) => ({ ...entry, features: Array.from(raw.features.subarray(entry.index * rawWidth, (entry.index + 1) * rawWidth)) }));
  return { report: regression.report, targetNames: regression.targetNames, scatter, residuals: regression.residuals, worst, featureNames: [...raw.featureNames] };
}
