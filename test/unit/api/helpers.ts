// Shared by the API and server tests: the repository's sample files and bounded waits.
import * as path from 'node:path';
import type { ApiResponse } from '../../../app/api';

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
