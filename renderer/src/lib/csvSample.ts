// The first rows of a CSV file, read in the browser before it is sent: column names, a few values each and
// whether they look numeric, for the column roles table. The delimiter and header found here are sent with
// the file, so the server reads the columns the user saw.
import Papa from 'papaparse';
import { dropTrailingField, endsWithDelimiter } from '../../../app/core/data/csvQuirks';
import { cellAsPoint, guessDecimalMark, type DecimalMark } from '../../../app/core/data/decimalMark';
import { findHeadShape } from '../../../app/core/data/headShape';
import { isNumberText as isStrictNumber } from '../../../app/core/data/numbers';
import { damagedGzipProblem, decodeTextHead, isGzip } from '../../../app/core/data/textEncoding';
import { detectSklearnPreamble, type SklearnPreamble } from '../../../app/core/data/sklearnPreamble';

export type ColumnType = 'numeric' | 'text';

export interface SampledColumn {
  /** The header's name, or "column N" when the file has no header row. */
  name: string;
  /** The first values of the column (up to sampleRows). */
  values: string[];
  /** numeric when every non-empty sampled value is a number. */
  type: ColumnType;
}

export interface CsvSample {
  columns: SampledColumn[];
  /** Data rows sampled (header excluded). */
  rowCount: number;
}

export const sampleRows = 20;
export const decimalChoices = [
  { value: '.', title: 'Point (1.5)' },
  { value: ',', title: 'Comma (1,5)' },
] as const;

export const delimiterChoices = [
  { value: ',', title: 'Comma' },
  { value: ';', title: 'Semicolon' },
  { value: '\t', title: 'Tab' },
  { value: '|', title: 'Pipe' },
] as const;

const headBytes = 64 * 1024;

/** The loader's default missing-value markers (app/core/data/missing.ts), lower case; '' included. */
const missingMarkers = new Set(['', 'na', 'n/a', 'nan', 'null', '?', '-']);

/** The server's strict number syntax (app/core/data/numbers.ts: no hex, NaN or Infinity), in a file of this decimal mark. */
export function isNumberText(text: string, decimal: DecimalMark = '.'): boolean {
  return isStrictNumber(cellAsPoint(text, decimal));
}

/** The file's first 64 KiB as text in its encoding (UTF-8, or UTF-16 with its mark; decompressed first when gzip), without a byte order mark or a cut last line; or what the file is instead. */
export async function readCsvHead(file: Blob): Promise<{ text: string } | { problem: string }> {
  const first = new Uint8Array(await file.slice(0, headBytes).arrayBuffer());
  const head = isGzip(first) ? await gunzipHead(file, headBytes) : { bytes: first, cut: file.size > headBytes };
  if ('problem' in head) return head;
  const decoded = decodeTextHead(head.bytes);
  return 'problem' in decoded ? decoded : { text: cleanCsvHead(decoded.text, head.cut) };
}

/** A gzip file's first `byteCount` decompressed bytes (the browser's DecompressionStream, read no further). */
async function gunzipHead(file: Blob, byteCount: number): Promise<{ bytes: Uint8Array; cut: boolean } | { problem: string }> {
  const reader = file.stream().pipeThrough(new DecompressionStream('gzip')).getReader();
  const bytes = new Uint8Array(byteCount);
  let total = 0;
  try {
    while (total < byteCount) {
      const { done, value } = await reader.read();
      if (done) return { bytes: bytes.subarray(0, total), cut: false };
      const taken = Math.min(value.length, byteCount - total);
      bytes.set(value.subarray(0, taken), total);
      total += taken;
    }
    return { bytes, cut: true };
  } catch (error) {
    return { problem: `the file ${damagedGzipProblem((error as Error).message)}` };
  } finally {
    void reader.cancel().catch(() => {});
  }
}

/** A file's first bytes as text (a browser slice, or Electron's dialog `head`, both decoded without their byte order mark) without, when cut, the last partial line. */
export function cleanCsvHead(text: string, cut: boolean): string {
  return cut ? text.slice(0, Math.max(0, text.lastIndexOf('\n'))) : text;
}

function parseRows(text: string, delimiter: string, rows: number): string[][] {
  const parsed = Papa.parse<string[]>(text, { delimiter, preview: rows, skipEmptyLines: 'greedy' });
  // lines that end with a delimiter have no empty last column (the server's rule, app/core/data/csvQuirks.ts)
  return endsWithDelimiter(parsed.data) ? parsed.data.map(dropTrailingField) : parsed.data;
}

/** The delimiter that splits the first rows into the most, consistent fields (papaparse's guess among , ; tab |). */
export function guessDelimiter(text: string): string {
  const guessed = Papa.parse<string[]>(text, { preview: 50, delimitersToGuess: delimiterChoices.map((choice) => choice.value) }).meta.delimiter;
  return delimiterChoices.some((choice) => choice.value === guessed) ? guessed : ',';
}

/**
 * The head as the server reads the file's rows (app/core/data/headShape.ts, as loadCsv): without Excel's
 * `sep=;` line (whose delimiter it gives) and the '#' lines at the top; numpy's `# x,y,label` line becomes the
 * header line. With the delimiter and decimal mark found.
 */
export function rowsOfHead(head: string): { text: string; delimiter: string; decimal: DecimalMark } {
  const { body, delimiter, decimal, comments } = findHeadShape(head, {}, guessDelimiter, 200);
  const text = comments.names ? `${Papa.unparse([comments.names], { delimiter })}\n${body}` : body;
  return { text, delimiter, decimal };
}

/** The server's guess of the numbers' decimal mark (app/core/data/decimalMark.ts), from the same first rows. */
export function guessDecimal(text: string, delimiter: string): DecimalMark {
  return guessDecimalMark(parseRows(text, delimiter, 200), delimiter);
}

/** scikit-learn's `n_samples,n_features,<class names>` first row, which the server skips (and names the classes by). */
export function findPreamble(text: string, delimiter: string): SklearnPreamble | undefined {
  return detectSklearnPreamble(parseRows(text, delimiter, 2));
}

/**
 * The server's rule (app/core/data/csv.ts detectHeader): a header when some column has a text first cell
 * above numbers; none when a first-row cell is a number; for all-text files, a header when no first-row
 * cell recurs below it.
 */
export function guessHeader(text: string, delimiter: string, skipFirst = false, decimal: DecimalMark = '.'): boolean {
  const isNumber = (cell: string) => isNumberText(cell, decimal);
  const rows = parseRows(text, delimiter, 201).slice(skipFirst ? 1 : 0);
  if (rows.length === 0) return false;
  const [first, ...rest] = rows;
  let firstHasNumber = false;
  for (let column = 0; column < first.length; column++) {
    if (isNumber(first[column])) {
      firstHasNumber = true;
      continue;
    }
    const filled = rest.map((row) => row[column]).filter((cell) => cell !== undefined && cell.trim() !== '');
    if (filled.length > 0 && filled.every(isNumber)) return true;
  }
  if (firstHasNumber) return false;
  return first.every((cell, column) => !rest.some((row) => row[column]?.trim() === cell.trim()));
}

/** The columns as the server will read them with this delimiter and header choice (skipFirst: a preamble). */
export function sampleCsv(text: string, delimiter: string, header: boolean, skipFirst = false, decimal: DecimalMark = '.'): CsvSample {
  const skip = skipFirst ? 1 : 0;
  const rows = parseRows(text, delimiter, sampleRows + skip + (header ? 1 : 0)).slice(skip);
  const names = header && rows.length > 0 ? rows[0].map((name) => name.trim()) : [];
  const data = header ? rows.slice(1) : rows;
  const width = Math.max(names.length, ...data.map((row) => row.length), 0);
  const columns = Array.from({ length: width }, (_, index): SampledColumn => {
    const values = data.map((row) => (row[index] ?? '').trim());
    // the loader's default missing markers are no evidence of text
    const filled = values.filter((value) => !missingMarkers.has(value.toLowerCase()));
    return {
      name: names[index] || `column ${index + 1}`,
      values,
      type: filled.length > 0 && filled.every((value) => isNumberText(value, decimal)) ? 'numeric' : 'text',
    };
  });
  return { columns, rowCount: data.length };
}
