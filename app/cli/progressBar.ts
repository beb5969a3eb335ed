// A one-line progress bar for terminals: epoch, step, loss, samples/s and ETA, redrawn in place.
// Only used when stderr is a TTY; scripts get plain epoch lines (or nothing with --json).

export interface ProgressBarState {
  epoch: number;
  epochs: number;
  step: number;
  stepsPerEpoch: number;
  loss: number;
  samplesPerSecond: number;
  etaSeconds: number;
}

export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '--:--';
  const whole = Math.round(seconds);
  const h = Math.floor(whole / 3600);
  const m = Math.floor((whole % 3600) / 60);
  const s = whole % 60;
  const mmss = `${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}`;
  return h > 0 ? `${h}:${mmss}` : mmss;
}

export function renderProgressBar(state: ProgressBarState, width = 24): string {
  const fraction = state.stepsPerEpoch > 0 ? Math.min(1, state.step / state.stepsPerEpoch) : 0;
  const filled = Math.round(fraction * width);
  const bar = '█'.repeat(filled) + '░'.repeat(width - filled);
  const rate = state.samplesPerSecond >= 1000
    ? `${(state.samplesPerSecond / 1000).toFixed(1)}k`
    : state.samplesPerSecond.toFixed(0);
  return `epoch ${state.epoch}/${state.epochs} ${bar} ${state.step}/${state.stepsPerEpoch}` +
    `  loss ${state.loss.toFixed(4)}  ${rate} samples/s  ETA ${formatDuration(state.etaSeconds)}`;
}

/** Redraws one line on a TTY stream; `finish` leaves the last line in place. */
export class TerminalProgress {
  private lastLength = 0;
  constructor(private readonly stream: NodeJS.WriteStream) {}

  update(line: string): void {
    const padded = line.padEnd(this.lastLength);
    this.stream.write(`\r${padded}`);
    this.lastLength = line.length;
  }

  /** Writes a permanent line above the bar. */
  log(line: string): void {
    this.clear();
    this.stream.write(`${line}\n`);
  }

  clear(): void {
    if (this.lastLength > 0) this.stream.write(`\r${' '.repeat(this.lastLength)}\r`);
    this.lastLength = 0;
  }
}
