// Pieces of a file's error message that quote the file's own content: always one line and short, whatever
// the file holds (a 70 000-character key, a line break inside a JSON parse error, a missing field).
import type { z } from 'zod';

/** Text for a message: line breaks and control characters escaped, cut to `max` characters. */
export function oneLine(text: string, max = 120): string {
  const cut = text.length > max ? `${text.slice(0, max)}…` : text;
  return cut.replace(/[\u0000-\u001f\u2028\u2029]/g, (char) => JSON.stringify(char).slice(1, -1));
}

/** A value from the file, as JSON, cut: `[1,2,3,…]`; "missing" for undefined. */
export function valueText(value: unknown, max = 60): string {
  if (value === undefined) return 'missing';
  return oneLine(JSON.stringify(value) ?? String(value), max);
}

/** Why JSON.parse failed, in one short line. */
export function parseErrorText(error: unknown): string {
  return oneLine((error as Error | undefined)?.message ?? String(error));
}

/**
 * The first zod issue as `<path>: <problem>` (`prefix.a.b: missing`, `options.lr: Too small: expected
 * number to be >0`); zod's "expected X, received undefined" becomes "missing (expected X)".
 */
export function issueText(error: z.ZodError, prefix = '', whole = 'value'): string {
  const issue = error.issues[0];
  const path = issue.path.map((key) => oneLine(String(key), 40)).join('.');
  const where = prefix && path ? `${prefix}.${path}` : prefix || path || whole;
  const missing = issue.code === 'invalid_type' && / received undefined$/.test(issue.message);
  const problem = missing ? `missing (expected ${issue.expected})` : oneLine(issue.message, 200);
  return `${where}: ${problem}`;
}

/** "1 epoch", "2 epochs": a count with its noun, singular for exactly one. */
export function counted(count: number, noun: string, nounPlural = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : nounPlural}`;
}
