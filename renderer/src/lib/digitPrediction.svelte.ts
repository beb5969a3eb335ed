// Live class probabilities for a drawing: at most one models:predict in flight; while it runs, only the
// newest drawing waits (older ones are stale by the time it returns).
import type { ApiError } from '../../../app/api/types';
import { api } from './api';

type Device = 'auto' | 'cpu' | 'cuda';

export class DigitPrediction {
  probabilities = $state.raw<number[] | undefined>();
  classLabels = $state.raw<string[]>([]);
  error = $state<ApiError | undefined>();
  private inFlight = false;
  private waiting: { modelId: string; pixels: number[]; device: Device } | undefined;
  private generation = 0;

  request(modelId: string, pixels: number[], device: Device): void {
    this.waiting = { modelId, pixels, device };
    if (!this.inFlight) void this.send();
  }

  /** Forgets the shown probabilities (a cleared canvas) and any answer still on its way. */
  clear(): void {
    this.generation += 1;
    this.waiting = undefined;
    this.probabilities = undefined;
    this.error = undefined;
  }

  private async send(): Promise<void> {
    while (this.waiting) {
      const { modelId, pixels, device } = this.waiting;
      this.waiting = undefined;
      this.inFlight = true;
      const generation = this.generation;
      const answer = await api.invoke('models:predict', { modelId, inputs: [pixels], device });
      this.inFlight = false;
      if (generation !== this.generation) continue;
      if (answer.error) {
        this.error = answer.error;
      } else {
        this.error = undefined;
        this.probabilities = answer.result.probabilities[0];
        this.classLabels = answer.result.classLabels;
      }
    }
  }
}
