// The session's evaluations by id: evaluation:evaluate keeps each one's per-example outputs (as does a run
// with a test set) for evaluation:examples. Only the last few are kept: MNIST's test set is 31 MB.
import { services } from '../../services';
import type { PredictionSet } from '../../services/examples';
import type { ParsedPayloadOf } from '../schemas';
import type { CellExamples, EvaluationResult } from '../types';
import type { DatasetRegistry } from './datasets';
import type { IdSequence } from './ids';
import type { ModelRegistry } from './models';

export interface EvaluationRecord {
  modelId: string;
  predictions: PredictionSet;
}

export const keptEvaluations = 3;

export class EvaluationRegistry {
  private readonly records = new Map<string, EvaluationRecord>();

  constructor(
    private readonly ids: IdSequence,
    private readonly models: ModelRegistry,
    private readonly datasets: DatasetRegistry,
  ) {}

  /** Keeps an evaluation's outputs under a new id, forgetting the oldest beyond keptEvaluations. */
  keep(record: EvaluationRecord): string {
    const id = this.ids.next('evaluation');
    this.records.set(id, record);
    for (const old of this.records.keys()) {
      if (this.records.size <= keptEvaluations) break;
      this.records.delete(old);
    }
    return id;
  }

  get(id: string): EvaluationRecord {
    const record = this.records.get(id);
    if (!record) throw new Error(`no evaluation with id "${id}" (the session keeps the last ${keptEvaluations}; evaluate again)`);
    return record;
  }

  async evaluate({ modelId, datasetId, device }: ParsedPayloadOf<'evaluation:evaluate'>): Promise<EvaluationResult> {
    const { model } = this.models.get(modelId);
    const data = this.datasets.get(datasetId);
    const evaluation = await services.evaluation.evaluate(model, data.source, { device });
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

  examples({ evaluationId, ...query }: ParsedPayloadOf<'evaluation:examples'>): CellExamples {
    return services.evaluation.cellExamples(this.get(evaluationId).predictions, query);
  }

  clear(): void {
    this.records.clear();
  }
}
