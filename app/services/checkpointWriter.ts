// A run's checkpoints on disk: one write at a time, the newest waiting state next (epochs faster than the
// disk skip a file, never an epoch's consistency). The first failure is kept and stops the run.
import { saveCheckpoint, type Checkpoint } from '../core/model/checkpointFile';

export class CheckpointWriter {
  private writing: Promise<void> = Promise.resolve();
  private waiting: { checkpoint: Checkpoint; epoch: number } | undefined;
  private failure: Error | undefined;
  private written: string | undefined;

  /**
   * `onWritten` follows every file written; `onFailure` runs once, on the first write that fails (the
   * caller cancels the run there).
   */
  constructor(
    readonly path: string,
    private readonly onWritten: (epoch: number, path: string) => void,
    private readonly onFailure: (error: Error) => void,
  ) {}

  /** The write that failed, which ended the run. */
  get error(): Error | undefined {
    return this.failure;
  }

  /** The file, once a checkpoint was written to it. */
  get lastWritten(): string | undefined {
    return this.written;
  }

  /** After a failure nothing more is written: `accepts` says whether a new state is worth building. */
  get accepts(): boolean {
    return this.failure === undefined;
  }

  /** Queues an epoch's state; it replaces a state still waiting behind the write in progress. */
  offer(checkpoint: Checkpoint, epoch: number): void {
    if (this.failure) return;
    const queued = this.waiting !== undefined;
    this.waiting = { checkpoint, epoch };
    if (!queued) this.writing = this.writing.then(() => this.writeWaiting());
  }

  /** Settles when every queued state is written or dropped after a failure (never rejects). */
  settled(): Promise<void> {
    return this.writing;
  }

  private async writeWaiting(): Promise<void> {
    const next = this.waiting;
    this.waiting = undefined;
    if (!next || this.failure) return;
    try {
      await saveCheckpoint(this.path, next.checkpoint);
      this.written = this.path;
      this.onWritten(next.epoch, this.path);
    } catch (error) {
      this.failure = error as Error;
      this.onFailure(this.failure);
    }
  }
}
