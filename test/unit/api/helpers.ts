// Shared by the API and server tests: the repository's sample files and bounded waits. Importing it points
// the run history (NNSTUDIO_DATA_DIR) at a temporary folder, so tests never write to the user's data folder.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ApiResponse } from '../../../app/api';

if (!process.env.NNSTUDIO_DATA_DIR) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-data-'));
  process.env.NNSTUDIO_DATA_DIR = dataDir;
  process.on('exit', () => fs.rmSync(dataDir, { recursive: true, force: true }));
}

export const repoRoot = path.resolve(__dirname, '..', '..', '..', '..');
export const irisCsv = path.join(repoRoot, 'resources', 'samples', 'iris.csv');

/** Rejects with `what` when `promise` has not settled within `ms`. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The result of a response, failing the test with the error's message otherwise. */
export function resultOf<T>(response: ApiResponse<T>): T {
  if (response.error) throw new Error(`expected a result, got the error: ${response.error.message}`);
  return response.result as T;
}

/** What a logger was told, for tests that assert a failure was logged with its context. */
export interface LogEntry {
  level: 'error' | 'warn';
  context: string;
  error?: unknown;
}

/** A logger (app/core/log.ts's Logger) that keeps its entries; `text()` is every entry as one line each. */
export function captureLog(): { logger: { error(context: string, error?: unknown): void; warn(context: string, error?: unknown): void }; entries: LogEntry[]; text(): string } {
  const entries: LogEntry[] = [];
  const logger = {
    error: (context: string, error?: unknown) => void entries.push({ level: 'error', context, error }),
    warn: (context: string, error?: unknown) => void entries.push({ level: 'warn', context, error }),
  };
  const text = () => entries.map(({ level, context, error }) => `${level}: ${context}${error === undefined ? '' : `: ${error instanceof Error ? error.message : String(error)}`}`).join('\n');
  return { logger, entries, text };
}
