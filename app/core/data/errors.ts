// Errors about a user's data file: one line, starting with the file name, then where (row, column) and what.
import * as path from 'node:path';

export interface DataErrorPlace {
  /** 1-based line number in the file, counting the header line. */
  row?: number;
  /** 1-based column number, as a user counts columns. */
  column?: number;
  /** The column's header name, when the file has a header. */
  columnName?: string;
}

export class DataError extends Error {
  override readonly name = 'DataError';
  readonly file: string;
  readonly row?: number;
  readonly column?: number;
  readonly columnName?: string;
  /** What is wrong, without the file's name and place (for a face that shows the name already). */
  readonly detail: string;

  /** `file` is the path as given; the message names its base name. */
  constructor(file: string, detail: string, place: DataErrorPlace = {}) {
    super(`${path.basename(file)}${describePlace(place)}: ${detail}`);
    this.file = file;
    this.detail = detail;
    this.row = place.row;
    this.column = place.column;
    this.columnName = place.columnName;
  }
}

/** `, row 17, column "sepal_width" (3)` or `, row 17, column 3` or ''. */
export function describePlace(place: DataErrorPlace): string {
  let text = '';
  if (place.row !== undefined) text += `, row ${place.row}`;
  if (place.column !== undefined) {
    text += place.columnName !== undefined && place.columnName !== ''
      ? `, column ${quoteCell(place.columnName, 60)} (${place.column})`
      : `, column ${place.column}`;
  }
  return text;
}

/** Shortens a list of values for a message: `a, b, c, … (40 in all)`; odd or long values quoted and cut. */
export function listForMessage(values: readonly string[], max = 10): string {
  const shown = values.slice(0, max).map(nameForMessage).join(', ');
  return values.length <= max ? shown : `${shown}, … (${values.length} in all)`;
}

/** A name from a file (a header cell, a class) for a message: as it is when short and plain, else quoted and cut. */
export function nameForMessage(name: string): string {
  return /^[^\u0000-\u001f"\u2028\u2029]{0,40}$/.test(name) ? name : quoteCell(name, 40);
}

/** A cell's text for a one-line message: JSON-quoted (line breaks escaped), long texts cut. */
export function quoteCell(text: string, max = 40): string {
  return JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text);
}

/** A DataError for a failed open or read (not found, a folder, no permission). */
export function fileError(file: string, error: unknown): DataError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT') return new DataError(file, 'file not found');
  if (code === 'EISDIR') return new DataError(file, 'is a folder, not a file');
  if (code === 'EACCES' || code === 'EPERM') return new DataError(file, 'permission denied');
  return new DataError(file, `cannot be read: ${(error as Error | undefined)?.message ?? String(error)}`);
}
