// "Predict a file" (the Evaluate screen): a model and an open dataset (with or without its label column)
// picked, every row predicted (models:predictFile, the CSV `nnstudio predict` writes), its first rows
// shown and the whole CSV saved.
import type { ApiError, DatasetInfo, ModelInfo, PredictionFile } from '../../../../app/api/types';
import { api } from '../api';
import { savePredictions } from '../platform';
import type { Device } from './trainingDrafts';

export interface PredictFileDeps {
  models(): readonly ModelInfo[];
  datasets(): readonly DatasetInfo[];
  /** The dataset selected on the Data screen (the default pick). */
  selectedDatasetId(): string | undefined;
  device(): Device;
}

/** The predictions shown, with what they are of. */
export interface ShownPredictions extends PredictionFile {
  modelId: string;
  datasetId: string;
  title: string;
}

export class PredictFileState {
  /** The user's picks; until then the newest model and the selected dataset. */
  readonly picked = $state<{ modelId: string | undefined; datasetId: string | undefined }>({ modelId: undefined, datasetId: undefined });
  modelId = $derived.by(() => {
    const models = this.deps.models();
    return models.find((model) => model.id === this.picked.modelId)?.id ?? models[models.length - 1]?.id;
  });
  datasetId = $derived.by(() => {
    const datasets = this.deps.datasets();
    return datasets.find((dataset) => dataset.id === this.picked.datasetId)?.id ?? this.deps.selectedDatasetId() ?? datasets[0]?.id;
  });

  shown = $state.raw<ShownPredictions | undefined>();
  predicting = $state(false);
  saving = $state(false);
  error = $state<ApiError | undefined>();

  private readonly deps: PredictFileDeps;

  constructor(deps: PredictFileDeps) {
    this.deps = deps;
  }

  pickModel(modelId: string): void {
    this.picked.modelId = modelId;
  }

  pickDataset(datasetId: string): void {
    this.picked.datasetId = datasetId;
  }

  async predict(): Promise<void> {
    const { modelId, datasetId } = this;
    if (!modelId || !datasetId || this.predicting) return;
    this.error = undefined;
    this.predicting = true;
    try {
      const answer = await api.invoke('models:predictFile', { modelId, datasetId, device: this.deps.device() });
      if (answer.error) {
        this.error = answer.error;
        return;
      }
      const model = this.deps.models().find((entry) => entry.id === modelId)?.name ?? modelId;
      const data = this.deps.datasets().find((entry) => entry.id === datasetId)?.name ?? datasetId;
      this.shown = { ...answer.result, modelId, datasetId, title: `${model} on ${data}` };
    } finally {
      this.predicting = false;
    }
  }

  async save(): Promise<void> {
    const shown = this.shown;
    if (!shown || this.saving) return;
    this.error = undefined;
    this.saving = true;
    try {
      this.error = await savePredictions(shown, this.deps.device());
    } catch (error) {
      this.error = { message: `cannot save the predictions: ${(error as Error).message}` };
    } finally {
      this.saving = false;
    }
  }
}
