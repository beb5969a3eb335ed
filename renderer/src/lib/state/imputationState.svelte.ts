// How missing cells are filled, per dataset (the Data screen's "Missing cells"): a choice for all columns and
// one per column with missing cells, kept as drafts the inputs bind to; trainingOptions() turns them into
// training:start's `imputation`. The server's default (iterative, no indicator) is sent as nothing at all.
import type { DatasetInfo, PayloadOf } from '../../../../app/api/types';
import { datasetFacts } from '../datasetFacts';

export type FillStrategy = 'iterative' | 'median' | 'mean' | 'most_frequent' | 'constant';
/** A column's choice: one of the strategies, or the one chosen for all columns. */
export type ColumnFillStrategy = FillStrategy | 'default';

export type ImputationSettings = NonNullable<PayloadOf<'training:start'>['imputation']>;
type FillSetting = ImputationSettings['default'];

/** In plain words: "Fill missing cells with: the median of the training rows". */
export const fillChoices: { value: FillStrategy; title: string }[] = [
  { value: 'iterative', title: 'an estimate from the row\'s other columns' },
  { value: 'median', title: 'the median of the training rows' },
  { value: 'mean', title: 'the mean of the training rows' },
  { value: 'most_frequent', title: 'the most frequent value of the training rows' },
  { value: 'constant', title: 'a fixed value' },
];

export interface FillDraft {
  strategy: FillStrategy;
  /** For 'constant'; empty: 0. */
  fillValue: number | null;
  indicator: boolean;
}

export interface ColumnFillDraft {
  strategy: ColumnFillStrategy;
  fillValue: number | null;
  /** null: as for all columns. */
  indicator: boolean | null;
}

export interface ImputationDraft {
  all: FillDraft;
  columns: Record<string, ColumnFillDraft>;
}

const serverDefault: FillDraft = { strategy: 'iterative', fillValue: null, indicator: false };

function newDraft(): ImputationDraft {
  return { all: { ...serverDefault }, columns: {} };
}

function setting(strategy: FillStrategy, fillValue: number | null, indicator: boolean): FillSetting {
  return { strategy, ...(strategy === 'constant' && fillValue !== null ? { fillValue } : {}), indicator };
}

export class ImputationState {
  /** By dataset id. */
  private readonly drafts = $state<Record<string, ImputationDraft>>({});

  /**
   * Makes the drafts of a dataset and of its columns with missing cells (an action, called on selection:
   * a derived value or the template may not create state).
   */
  prepare(dataset: DatasetInfo): void {
    if (dataset.kind !== 'table') return;
    const draft = (this.drafts[dataset.id] ??= newDraft());
    for (const column of datasetFacts(dataset).columns) {
      if (column.missingShare > 0) draft.columns[column.name] ??= { strategy: 'default', fillValue: null, indicator: null };
    }
  }

  draftFor(datasetId: string): ImputationDraft | undefined {
    return this.drafts[datasetId];
  }

  /** The dataset was opened again (another task, dates as parts): the choices follow it. */
  carry(fromId: string, toId: string): void {
    const draft = this.drafts[fromId];
    if (draft) this.drafts[toId] = $state.snapshot(draft);
  }

  /** Every dataset's choices, for the session's workspace. */
  snapshot(): Record<string, ImputationDraft> {
    return $state.snapshot(this.drafts);
  }

  restore(saved: Record<string, ImputationDraft>): void {
    for (const id of Object.keys(this.drafts)) delete this.drafts[id];
    Object.assign(this.drafts, structuredClone(saved));
  }

  forget(datasetId: string): void {
    delete this.drafts[datasetId];
  }

  /** training:start's `imputation` for a dataset; nothing when it is the server's default. */
  trainingOptions(dataset: DatasetInfo | undefined): { imputation?: ImputationSettings } {
    if (!dataset || dataset.kind !== 'table') return {};
    const draft = this.drafts[dataset.id];
    if (!draft) return {};
    const all = setting(draft.all.strategy, draft.all.fillValue, draft.all.indicator);
    const columns: Record<string, FillSetting> = {};
    for (const [name, column] of Object.entries(draft.columns)) {
      const indicator = column.indicator ?? draft.all.indicator;
      if (column.strategy === 'default' && indicator === draft.all.indicator) continue;
      columns[name] = column.strategy === 'default' ? { ...all, indicator } : setting(column.strategy, column.fillValue, indicator);
    }
    const isDefault = all.strategy === serverDefault.strategy && !all.indicator && Object.keys(columns).length === 0;
    if (isDefault) return {};
    return { imputation: { default: all, ...(Object.keys(columns).length > 0 ? { columns } : {}) } };
  }
}
