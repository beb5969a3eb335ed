// A run's pause, resume, cancel and learning rate as a value the face holds (VS Code's cancellation token,
// not a global flag): trainModel attaches the engine run to it while the run lasts.
import type * as engine from '../engine';

/**
 * Pause, resume and cancel for one run, passed into `trainModel` (a value, not a global flag). Calls made
 * before the engine run exists (while the data loads) are remembered and applied when it starts.
 */
export class TrainingControl {
  private run: engine.TrainingRun | undefined;
  private pausedNow = false;
  private cancelledNow = false;
  private pendingLearningRate: number | undefined;

  get paused(): boolean {
    return this.pausedNow;
  }

  get cancelled(): boolean {
    return this.cancelledNow;
  }

  pause(): void {
    if (this.cancelledNow || this.pausedNow) return;
    this.pausedNow = true;
    this.run?.pause();
  }

  resume(): void {
    if (!this.pausedNow) return;
    this.pausedNow = false;
    this.run?.resume();
  }

  /** Stops within one step; a paused run stops without resuming. */
  cancel(): void {
    if (this.cancelledNow) return;
    this.cancelledNow = true;
    this.pausedNow = false;
    this.run?.cancel();
  }

  /** A new base learning rate from the next step (throws RangeError unless in (0, 1e6]). */
  setLearningRate(lr: number): void {
    if (!(Number.isFinite(lr) && lr > 0 && lr <= 1e6)) throw new RangeError('learning rate must be a number in (0, 1e6]');
    if (this.run) this.run.setLearningRate(lr);
    else this.pendingLearningRate = lr;
  }

  /** Called by trainModel when the engine run starts and ends. */
  attach(run: engine.TrainingRun | undefined): void {
    this.run = run;
    if (!run) return;
    if (this.pendingLearningRate !== undefined) run.setLearningRate(this.pendingLearningRate);
    this.pendingLearningRate = undefined;
    if (this.cancelledNow) run.cancel();
    else if (this.pausedNow) run.pause();
  }
}
