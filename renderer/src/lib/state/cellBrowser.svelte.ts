// The examples behind the confusion-matrix cell the user picked: one cell at a time, paged, most (or
// least) confident first. A new evaluation or cell replaces the page; replies to an older request are dropped.
import type { ApiError, CellExamples } from '../../../../app/api/types';
import { api } from '../api';

export type ConfidenceOrder = CellExamples['order'];

export interface PickedCell {
  evaluationId: string;
  actual: number;
  predicted: number;
}

const pageSize = 48;

export class CellBrowser {
  cell = $state<PickedCell | undefined>();
  order = $state<ConfidenceOrder>('highest');
  page = $state.raw<CellExamples | undefined>();
  loading = $state(false);
  error = $state<ApiError | undefined>();
  private serial = 0;

  /** Shows the cell (true `actual`, predicted `predicted`) of an evaluation; picking it again closes it. */
  async pick(evaluationId: string, actual: number, predicted: number): Promise<void> {
    const current = this.cell;
    if (current && current.evaluationId === evaluationId && current.actual === actual && current.predicted === predicted) {
      this.close();
      return;
    }
    this.cell = { evaluationId, actual, predicted };
    await this.load(false);
  }

  async setOrder(order: ConfidenceOrder): Promise<void> {
    if (order === this.order) return;
    this.order = order;
    if (this.cell) await this.load(false);
  }

  /** The next page, appended. */
  async more(): Promise<void> {
    if (this.cell && this.page && this.page.examples.length < this.page.total) await this.load(true);
  }

  close(): void {
    this.serial += 1;
    this.cell = undefined;
    this.page = undefined;
    this.error = undefined;
    this.loading = false;
  }

  private async load(append: boolean): Promise<void> {
    const cell = this.cell;
    if (!cell) return;
    const serial = ++this.serial;
    const offset = append && this.page ? this.page.examples.length : 0;
    if (!append) this.page = undefined;
    this.loading = true;
    this.error = undefined;
    const answer = await api.invoke('evaluation:examples', { ...cell, order: this.order, limit: pageSize, offset });
    if (serial !== this.serial) return;
    this.loading = false;
    if (answer.error) {
      this.error = answer.error;
      return;
    }
    const previous = append ? (this.page?.examples ?? []) : [];
    this.page = { ...answer.result, offset: 0, examples: [...previous, ...answer.result.examples] };
  }
}
