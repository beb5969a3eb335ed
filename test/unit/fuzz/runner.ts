// Runs a reader's fuzz cases on a worker thread with a watchdog: a case that runs past the time limit is a
// hang (the worker is terminated and restarted after it), a worker that dies (out of memory, an uncaught
// exception, a promise that never settles) is a crash. Both are failures naming the seed and the case.
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { caseRandom } from './random';
import { fuzzTarget } from './targets';

export interface FuzzOptions {
  seed: number;
  /** Cases [start, start + count). */
  count: number;
  start?: number;
  /** Per case; a case running longer is a hang. */
  timeLimitMs?: number;
  /** Typed arrays and Buffers larger than this throw in the worker (see allocations.ts). */
  allocationLimitBytes?: number;
  /** Growth of the peak resident memory within one case that counts as a failure. */
  memoryLimitMb?: number;
  /** The worker's JS heap (an input that fills it is a crash). */
  heapLimitMb?: number;
}

export interface WorkerInput {
  reader: string;
  seed: number;
  start: number;
  end: number;
  progress: SharedArrayBuffer;
  allocationLimitBytes: number;
  memoryLimitMb: number;
}

export interface WorkerFailure {
  index: number;
  description: string;
  problem: string;
}

export type WorkerMessage =
  | { type: 'failure'; failure: WorkerFailure }
  | { type: 'done' }
  | { type: 'crash'; problem: string };

export interface ReaderReport {
  reader: string;
  seed: number;
  /** Inputs tried. */
  inputs: number;
  /** Read successfully, with a valid result. */
  accepted: number;
  /** Refused with the documented error. */
  rejected: number;
  failures: WorkerFailure[];
  seconds: number;
}

const workerFile = path.join(__dirname, 'worker.js');

/** A case's description, rebuilt here (the worker that ran it is gone). */
function describeCase(reader: string, seed: number, index: number): string {
  try {
    return fuzzTarget(reader).makeCase(caseRandom(seed, reader, index)).description;
  } catch (error) {
    return `(the case could not be built: ${(error as Error).message})`;
  }
}

/** Runs cases until `end` or a failure that stops the worker; resolves where it stopped. */
function runWorker(
  reader: string,
  start: number,
  end: number,
  options: Required<FuzzOptions>,
  report: ReaderReport,
): Promise<{ next: number }> {
  return new Promise((resolve) => {
    const progress = new SharedArrayBuffer(12); // [case running + 1, accepted, rejected]
    const current = new Int32Array(progress);
    const input: WorkerInput = {
      reader, seed: options.seed, start, end, progress,
      allocationLimitBytes: options.allocationLimitBytes, memoryLimitMb: options.memoryLimitMb,
    };
    const worker = new Worker(workerFile, { workerData: input, resourceLimits: { maxOldGenerationSizeMb: options.heapLimitMb } });
    let settled = false;
    let seen = 0;
    let seenAt = Date.now();
    const stopAt = (index: number, problem: string) => {
      if (settled) return;
      settled = true;
      clearInterval(watchdog);
      report.accepted += Atomics.load(current, 1);
      report.rejected += Atomics.load(current, 2);
      report.failures.push({ index, description: describeCase(reader, options.seed, index), problem });
      void worker.terminate();
      resolve({ next: index + 1 });
    };
    const running = () => Atomics.load(current, 0) - 1; // -1 while loading
    const watchdog = setInterval(() => {
      const now = Atomics.load(current, 0);
      if (now !== seen) {
        seen = now;
        seenAt = Date.now();
      } else if (now > 0 && Date.now() - seenAt > options.timeLimitMs) {
        stopAt(now - 1, `a hang: still running after ${options.timeLimitMs} ms`);
      }
    }, Math.min(100, options.timeLimitMs / 4));
    worker.on('message', (message: WorkerMessage) => {
      if (message.type === 'failure') report.failures.push(message.failure);
      else if (message.type === 'done') {
        report.accepted += Atomics.load(current, 1);
        report.rejected += Atomics.load(current, 2);
        settled = true;
        clearInterval(watchdog);
        void worker.terminate();
        resolve({ next: end });
      } else {
        stopAt(Math.max(running(), start), `a crash: ${message.problem}`);
      }
    });
    worker.on('error', (error) => stopAt(Math.max(running(), start), `a crash: ${(error as NodeJS.ErrnoException).code ?? ''} ${error.message}`));
    worker.on('exit', (code) => stopAt(Math.max(running(), start), `the worker exited (code ${code}) during the case: a promise that never settles, or process.exit`));
  });
}

/** Fuzzes one reader: `count` cases from `seed`; every failure is in the report. */
export async function fuzzReader(reader: string, options: FuzzOptions): Promise<ReaderReport> {
  const full: Required<FuzzOptions> = {
    start: 0, timeLimitMs: 2000, allocationLimitBytes: 256 * 2 ** 20, memoryLimitMb: 256, heapLimitMb: 1024, ...options,
  };
  const report: ReaderReport = { reader, seed: full.seed, inputs: full.count, accepted: 0, rejected: 0, failures: [], seconds: 0 };
  const began = process.hrtime.bigint();
  const end = full.start + full.count;
  let next = full.start;
  while (next < end) {
    // A case after a hang or crash gets a fresh worker.
    ({ next } = await runWorker(reader, next, end, full, report));
  }
  report.seconds = Number(process.hrtime.bigint() - began) / 1e9;
  report.failures.sort((a, b) => a.index - b.index);
  return report;
}

/** `npm run fuzz -- --reader csv --seed 1 --case 123` */
export function replayCommand(reader: string, seed: number, index: number): string {
  return `npm run fuzz -- --reader ${reader} --seed ${seed} --case ${index}`;
}

/** The failures as lines: reader, seed, case, problem, what the input was and how to replay it. */
export function formatFailures(report: ReaderReport): string {
  return report.failures
    .map((failure) => [
      `FAIL ${report.reader} seed=${report.seed} case=${failure.index}: ${failure.problem}`,
      `  input: ${failure.description}`,
      `  replay: ${replayCommand(report.reader, report.seed, failure.index)}`,
    ].join('\n'))
    .join('\n');
}
