// How the open data is split and normalised for training (the Data screen's settings; the Model screen edits
// the validation share too): the shares as typed, the normalisation chosen per dataset, and the counts
// datasets:split answers for them. They reach training:start through trainingOptions().
import type { ApiError, DatasetInfo, SplitPlan, Workspace } from '../../../../app/api/types';
import { api } from '../api';

export type Normalization = 'none' | 'minmax' | 'zscore';

export const normalizationChoices: { value: Normalization; title: string; explanation: string }[] = [
  { value: 'none', title: 'None', explanation: 'Values as they are; right for pixels, which are already scaled to 0–1.' },
  { value: 'minmax', title: 'Min-max', explanation: 'Each feature scaled to 0–1 by its smallest and largest training value.' },
  { value: 'zscore', title: 'Z-score', explanation: 'Each feature shifted and scaled to mean 0 and standard deviation 1.' },
];

/** The server's default: pixels are already in [0,1], table columns have scales of their own. */
export function recommendedNormalization(dataset: DatasetInfo): Normalization {
  return dataset.kind === 'images' ? 'none' : 'zscore';
}

/** The shares as the inputs hold them (null: empty, the server's default). */
export interface SplitDraft {
  /** Share of the training data held out for the validation curves. */
  valSplit: number | null;
  /** Share of the data held out for test metrics when there is no separate test set (the server's default). */
  testSplit: number | null;
}

export class SplitState {
  readonly draft = $state<SplitDraft>({ valSplit: 0.1, testSplit: 0.2 });
  /** The user's choice per dataset id; otherwise the recommended one. */
  private normalizationChoice = $state<Record<string, Normalization>>({});

  plan = $state.raw<SplitPlan | undefined>();
  planError = $state<ApiError | undefined>();
  private planSerial = 0;

  normalizationFor(dataset: DatasetInfo): Normalization {
    return this.normalizationChoice[dataset.id] ?? recommendedNormalization(dataset);
  }

  setNormalization(dataset: DatasetInfo, kind: Normalization): void {
    this.normalizationChoice[dataset.id] = kind;
  }

  /**
   * For an effect: reads the shares (so the effect reruns when they change) and asks for the counts after a
   * pause in typing (one request per pause). Returns the cleanup that drops a pending request.
   */
  followPlan(datasetId: string): () => void {
    const { valSplit, testSplit } = this.draft;
    const timer = setTimeout(() => void this.refreshPlan(datasetId, valSplit, testSplit), 120);
    return () => clearTimeout(timer);
  }

  /** The counts training:start would use; a late answer for older settings is dropped. */
  private async refreshPlan(datasetId: string, valSplit: number | null, testSplit: number | null): Promise<void> {
    const serial = ++this.planSerial;
    const answer = await api.invoke('datasets:split', {
      datasetId,
      ...(valSplit !== null ? { valSplit } : {}),
      ...(testSplit !== null ? { testSplit } : {}),
    });
    if (serial !== this.planSerial) return;
    this.plan = answer.result;
    this.planError = answer.error;
  }

  /**
   * Another dataset was selected: a validation share left at the last dataset's default takes the new one's
   * (a small regression table trains on every row); a share the user typed stays.
   */
  followDefault(previous: DatasetInfo | undefined, next: DatasetInfo): void {
    const previousDefault = previous?.defaultValSplit ?? 0.1;
    if (this.draft.valSplit === previousDefault) this.draft.valSplit = next.defaultValSplit;
  }

  /** The shares and the normalisation choices, for the session's workspace. */
  snapshot(): NonNullable<Workspace['split']> {
    return { ...this.draft, normalization: { ...this.normalizationChoice } };
  }

  restore(saved: NonNullable<Workspace['split']>): void {
    this.draft.valSplit = saved.valSplit;
    this.draft.testSplit = saved.testSplit;
    this.normalizationChoice = { ...saved.normalization };
  }

  /** training:start's shares and normalisation for this dataset. */
  trainingOptions(dataset: DatasetInfo | undefined): { valSplit?: number; testSplit?: number; normalize?: Normalization } {
    const { valSplit, testSplit } = this.draft;
    return {
      ...(valSplit !== null ? { valSplit } : {}),
      ...(testSplit !== null ? { testSplit } : {}),
      ...(dataset ? { normalize: this.normalizationFor(dataset) } : {}),
    };
  }
}
