// CSV import (DESIGN §4): streamed through papaparse row by row, never read into one string.
//
// Rows and columns in messages are 1-based, as a user counts them in an editor or a spreadsheet:
// row = line number in the file (the header line is row 1), column = field number. Options that pick
// columns take a header name or a 0-based index (negative counts from the end: -1 is the last column).
//
// Since issue 13 the loader reads the whole file before deciding what each column is (columnReport.ts):
// missing markers, numbers, categories, dates, IDs, constant columns and free text; then whether the label
// is a class or a number to predict (task.ts). Rows whose label or target is missing are dropped and
// counted in `notes`. The decisions are stored in the encoding, so later files are read the same way.
import * as Papa from 'papaparse';
import type { ColumnReport } from './columnReport';
import { IntBuffer, ScannedColumns } from './columnStore';
import { finishCsv } from './csvFinish';
import { layoutFromEncoding, layoutFromOptions, type ColumnRef, type Layout } from './csvLayout';
import type { Dataset } from './dataset';
import type { CsvEncoding } from './encoding';
import { dropTrailingField, endsWithDelimiter, isBlankRow } from './csvQuirks';
import { applyDecimalMark, type DecimalMark } from './decimalMark';
import { findHeadShape, type HeadShape } from './headShape';
import { DataError } from './errors';
import { dataStreamError, openDataStream, readHeadBytes } from './compressedText';
import { decodeTextHead, type TextEncoding } from './textEncoding';
import { defaultMissingMarkers, missingTest } from './missing';
import { isNumberText, maxFloat32, parseStrictNumber } from './numbers';
import { detectSklearnPreamble, preambleApplies } from './sklearnPreamble';

export { parseStrictNumber } from './numbers';
export { resolveColumn, type ColumnRef } from './csvLayout';
export { isBlankRow } from './csvQuirks';

export interface CsvOptions {
  /** Field delimiter; sniffed from the first rows when absent (`,` `;` tab `|`, else a space). `tab` and `\t` mean tab. */
  delimiter?: string;
  /** The decimal mark of the file's numbers; sniffed when absent (decimalMark.ts: ',' only with another delimiter). */
  decimal?: DecimalMark;
  /** Whether the first row is a header; detected when absent (see `detectHeader`). */
  header?: boolean;
  /** Header name or 0-based index (negative from the end). Default: the last column. */
  labelColumn?: ColumnRef;
  /** Several target columns to predict (regression). Replaces labelColumn. */
  targetColumns?: readonly ColumnRef[];
  /** Classification or regression; inferred from the label column when absent (task.ts). */
  task?: 'classification' | 'regression';
  /** The file has no label column (prediction input); labels are all -1. */
  unlabeled?: boolean;
  /** Columns one-hot encoded instead of inferred (categories sorted). */
  categorical?: readonly ColumnRef[];
  /** Columns left out entirely (ids, free text). */
  ignoreColumns?: readonly ColumnRef[];
  /** Cell texts that mean "missing" (trimmed, any case). Default: '', NA, N/A, NaN, null, ?, -. */
  missingMarkers?: readonly string[];
  /** Date columns: numeric parts (year, month, day, weekday, hour when written) or left out. Default 'ignore' (csvFinish defaultDates). */
  dates?: 'parts' | 'ignore';
  /** Known classes (a trained model's labels): every label must be one of them, in this order. */
  classLabels?: readonly string[];
  /** Reshape the features to [C,H,W]; the feature count must equal C*H*W. Every feature cell must be a number. */
  imageShape?: readonly number[];
  /** Divide every feature by this (255 for pixel CSVs). */
  pixelScale?: number;
  /**
   * The encoding of the training data (from an earlier load or from the model file): the same columns,
   * categories, date parts, classes or targets, image shape, pixel scale and missing markers are applied,
   * and the column options above are ignored. With a header on both files columns are matched by name,
   * otherwise by position.
   */
  encoding?: CsvEncoding;
  /** Stop after this many data rows (previews). */
  limit?: number;
  /** Also build the column report (dataset.report). */
  report?: boolean;
}

export interface CsvDataset extends Dataset {
  encoding: CsvEncoding;
  /** Per column of the file: type, missing share, distinct values, range, histogram (with `report: true`). */
  report?: ColumnReport[];
}

const headBytes = 64 * 1024;
/**
 * More columns than this is refused: each column keeps a little state while the file streams by (about 3 KB
 * when all its cells are text), and a wrong delimiter or lost line ends make one row of every field.
 * Excel stops at 16 384 columns; a 3x128x128 pixel CSV has 49 153.
 */
export const maxColumns = 65_536;
const headerSampleRows = 200;

// ---- delimiter and header detection ----

const delimiterCandidates = [',', ';', '\t', '|'];

/**
 * Picks the delimiter that splits the sample's rows into the same number (> 1) of fields, preferring
 * more fields, then the order `,` `;` tab `|`. A single space is tried only when none of those splits a
 * row (scikit-learn's linnerud and diabetes files). Falls back to the most consistent one, then to `,`.
 */
export function sniffDelimiter(sample: string): string {
  const best = bestDelimiter(sample, delimiterCandidates);
  return best ?? bestDelimiter(sample, [' ']) ?? ',';
}

function bestDelimiter(sample: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestScore = -Infinity;
  for (const delimiter of candidates) {
    const rows = Papa.parse<string[]>(sample, { delimiter, preview: 50 }).data.filter((row) => !isBlankRow(row));
    if (rows.length === 0) continue;
    const counts = rows.map((row) => row.length);
    const mostFields = Math.max(...counts);
    if (mostFields < 2) continue;
    const modal = counts.filter((count) => count === counts[0]).length / counts.length;
    // Consistent rows beat any inconsistent split; among consistent ones, more fields win.
    const score = modal === 1 ? 1e6 + mostFields : modal * 1e3 + mostFields;
    if (score > bestScore) {
      bestScore = score;
      best = delimiter;
    }
  }
  return best;
}

/**
 * A header when some column has a non-numeric first cell above numeric cells. Otherwise none when any
 * first-row cell is a number; for all-text files, a header when no first-row cell recurs in its column.
 * Missing markers (an empty cell, NA, ?) are no evidence either way.
 */
export function detectHeader(rows: readonly (readonly string[])[], isMissing: (text: string) => boolean = missingTest()): boolean {
  if (rows.length === 0) return false;
  const first = rows[0];
  const rest = rows.slice(1);
  let firstHasNumber = false;
  for (let column = 0; column < first.length; column++) {
    if (isNumberText(first[column])) {
      firstHasNumber = true;
      continue;
    }
    if (isMissing(first[column])) continue;
    let filled = 0;
    let numeric = 0;
    for (const row of rest) {
      const cell = row[column];
      if (cell === undefined || isMissing(cell)) continue;
      filled++;
      if (isNumberText(cell)) numeric++;
    }
    if (filled > 0 && numeric === filled) return true;
  }
  if (firstHasNumber) return false;
  for (let column = 0; column < first.length; column++) {
    const name = first[column].trim();
    if (rest.some((row) => row[column] !== undefined && row[column].trim() === name)) return false;
  }
  return true;
}

function normaliseDelimiter(delimiter: string): string {
  if (delimiter === 'tab' || delimiter === '\\t') return '\t';
  if (delimiter.length === 0) throw new Error('the delimiter must not be empty');
  return delimiter;
}

// ---- the streaming pass ----

/** How the file is written, found from its first 64 KiB before the streaming pass (headShape.ts). */
export type FileShape = Omit<HeadShape, 'body'> & { encoding: TextEncoding; gzip: boolean };

/** What the streaming pass gathered, for finishCsv. */
export interface CsvRead {
  file: string;
  shape: FileShape;
  /** Every line ended with a delimiter: the empty field after it was dropped. */
  trailingDelimiter: boolean;
  options: CsvOptions;
  hasHeader: boolean;
  layout: Layout;
  scan: ScannedColumns;
  /** File line of each kept data row. */
  lines: IntBuffer;
  count: number;
  /** Rows left out because a label or target cell was missing: how many, and the first few lines. */
  dropped: { count: number; lines: number[] };
  markers: readonly string[];
  isMissing: (text: string) => boolean;
  /** scikit-learn preamble class names (target index → name), when the file has one. */
  sklearnClasses?: string[];
}

class CsvReader {
  private layout?: Layout;
  private scan?: ScannedColumns;
  private hasHeader = false;
  private sklearnClasses?: string[];
  private readonly sample: { fields: string[]; row: number }[] = [];
  private sampling = true;
  private readonly lines = new IntBuffer(1024);
  private readonly dropped = { count: 0, lines: [] as number[] };
  private readonly markers: readonly string[];
  private readonly isMissing: (text: string) => boolean;
  /** A marker that reads as a number (-999): cells are checked against the markers before parsing. */
  private readonly numericMarkers: boolean;
  /** Every sampled line ended with a delimiter: the empty field after it is not a column. */
  private trailingDelimiter = false;
  /** Excel's `sep=X` line comes first and is not data. */
  private separatorLinePending: boolean;
  count = 0;
  done = false;

  constructor(
    private readonly file: string,
    private readonly shape: FileShape,
    private readonly options: CsvOptions,
  ) {
    this.separatorLinePending = shape.separatorLine !== undefined;
    this.markers = options.encoding?.missingMarkers ?? options.missingMarkers ?? defaultMissingMarkers;
    this.isMissing = missingTest(this.markers);
    this.numericMarkers = this.markers.some(isNumberText);
  }

  /** One record from the parser; `row` is its first line number. Returns the number of line breaks inside it. */
  record(fields: string[], row: number): number {
    if (this.separatorLinePending) {
      this.separatorLinePending = false;
      return 0;
    }
    applyDecimalMark(fields, this.shape.decimal);
    if (this.sampling) {
      if (isBlankRow(fields)) return 0;
      this.sample.push({ fields, row });
      const breaks = fields.reduce((sum, field) => sum + countLineBreaks(field), 0);
      if (this.sample.length >= headerSampleRows) this.endSampling();
      return breaks;
    }
    if (isBlankRow(fields)) return 0;
    if (this.trailingDelimiter) dropTrailingField(fields);
    this.dataRow(fields, row);
    const textSources = this.layout!.textSources;
    let breaks = 0;
    for (let i = 0; i < textSources.length; i++) breaks += countLineBreaks(fields[textSources[i]]);
    return breaks;
  }

  private endSampling(): void {
    this.sampling = false;
    if (this.sample.length === 0) return;
    const preamble = detectSklearnPreamble(this.sample.map((entry) => entry.fields));
    if (preambleApplies(preamble, this.options.header)) {
      this.sklearnClasses = preamble.classes;
      this.sample.shift();
    }
    const rows = this.sample.map((entry) => entry.fields);
    this.trailingDelimiter = endsWithDelimiter(rows);
    if (this.trailingDelimiter) rows.forEach(dropTrailingField);
    this.hasHeader = this.options.header ?? detectHeader(rows, this.isMissing);
    const first = this.sample[0].fields;
    if (first.length > maxColumns) {
      throw new DataError(this.file, `${first.length.toLocaleString('en-US')} columns in the ${this.hasHeader ? 'header' : 'first row'}, more than ${maxColumns.toLocaleString('en-US')}: is the delimiter right, and does each row end with a line break?`, { row: this.sample[0].row });
    }
    const names = this.hasHeader ? first.map((name) => name.trim()) : new Array<string>(first.length).fill('');
    const encoding = this.options.encoding;
    this.layout = encoding !== undefined
      ? layoutFromEncoding(this.file, encoding, this.options.unlabeled === true, names, this.hasHeader)
      : layoutFromOptions(this.file, this.options, names, this.hasHeader);
    this.scan = new ScannedColumns(this.layout.scanSources.length);
    for (let i = this.hasHeader ? 1 : 0; i < this.sample.length && !this.done; i++) {
      this.dataRow(this.sample[i].fields, this.sample[i].row);
    }
    this.sample.length = 0;
  }

  private dataRow(fields: string[], row: number): void {
    if (this.done) return;
    if (isBlankRow(fields)) return;
    const layout = this.layout!;
    if (fields.length !== layout.columnCount) {
      throw new DataError(this.file, `${fields.length} field(s), expected ${layout.columnCount} like the ${this.hasHeader ? 'header' : 'first row'}`, { row });
    }
    const isMissing = this.isMissing;
    // Targets first: a row whose label or target is missing never reaches the features.
    const targets = layout.targets;
    for (let i = 0; i < targets.length; i++) {
      if (isMissing(fields[targets[i].source])) {
        this.dropped.count++;
        if (this.dropped.lines.length < 5) this.dropped.lines.push(row);
        return;
      }
    }
    for (let i = 0; i < targets.length; i++) targets[i].column.add(this.targetText(fields[targets[i].source].trim()), false);
    this.scanRow(fields);
    const textFeatures = layout.textFeatures;
    for (let i = 0; i < textFeatures.length; i++) {
      const feature = textFeatures[i];
      const text = fields[feature.source].trim();
      feature.column.add(text, !feature.strict && isMissing(text));
    }
    this.lines.push(row);
    this.count++;
    if (this.options.limit !== undefined && this.count >= this.options.limit) this.done = true;
  }

  /** Numbers into the Float32 buffer; NaN and the cell's text kept apart where it is missing or not a number. */
  private scanRow(fields: string[]): void {
    const scan = this.scan!;
    const layout = this.layout!;
    const sources = layout.scanSources;
    const numbers = scan.numbers;
    numbers.reserve(sources.length);
    const out = numbers.data;
    let at = numbers.length;
    if (this.numericMarkers) {
      this.scanRowWithNumericMarkers(fields);
      return;
    }
    if (!layout.inferred) {
      // Types fixed (pixel CSVs, stored encodings): no per-column statistics to gather.
      for (let i = 0; i < sources.length; i++) {
        const text = fields[sources[i]];
        const value = parseStrictNumber(text);
        if (Math.abs(value) <= maxFloat32) out[at++] = value;
        else out[at++] = this.notANumber(scan, i, text);
      }
      numbers.length = at;
      return;
    }
    const { min, max, sum, fractional } = scan;
    for (let i = 0; i < sources.length; i++) {
      const text = fields[sources[i]];
      const value = parseStrictNumber(text);
      if (Math.abs(value) <= maxFloat32) {
        out[at++] = value;
        if (value < min[i]) min[i] = value;
        if (value > max[i]) max[i] = value;
        sum[i] += value;
        if (fractional[i] === 0 && Math.floor(value) !== value) fractional[i] = 1;
      } else {
        out[at++] = this.notANumber(scan, i, text);
      }
    }
    numbers.length = at;
  }

  /** The slow path for markers like -999: each cell is checked against the markers first. */
  private scanRowWithNumericMarkers(fields: string[]): void {
    const scan = this.scan!;
    const sources = this.layout!.scanSources;
    const numbers = scan.numbers;
    const { min, max, sum, fractional } = scan;
    let at = numbers.length;
    for (let i = 0; i < sources.length; i++) {
      const text = fields[sources[i]];
      const value = this.layout!.strictSlots[i] === 0 && this.isMissing(text) ? NaN : parseStrictNumber(text);
      if (Math.abs(value) <= maxFloat32) {
        numbers.data[at++] = value;
        if (value < min[i]) min[i] = value;
        if (value > max[i]) max[i] = value;
        sum[i] += value;
        if (fractional[i] === 0 && Math.floor(value) !== value) fractional[i] = 1;
      } else {
        numbers.data[at++] = this.notANumber(scan, i, text);
      }
    }
    numbers.length = at;
  }

  private notANumber(scan: ScannedColumns, slot: number, text: string): number {
    if (this.layout!.strictSlots[slot] === 0 && this.isMissing(text)) scan.missing[slot]++;
    else scan.addText(slot, text, this.count);
    return NaN;
  }

  /** A scikit-learn preamble's class index becomes its class name. */
  private targetText(text: string): string {
    const classes = this.sklearnClasses;
    if (classes === undefined || classes.length === 0 || !/^\d+$/.test(text)) return text;
    return classes[Number(text)] ?? text;
  }

  finish(): CsvDataset {
    if (this.sampling) {
      if (this.sample.length === 0) throw new DataError(this.file, 'the file is empty');
      this.endSampling();
    }
    return finishCsv({
      file: this.file,
      shape: this.shape,
      trailingDelimiter: this.trailingDelimiter,
      options: this.options,
      hasHeader: this.hasHeader,
      layout: this.layout!,
      scan: this.scan!,
      lines: this.lines,
      count: this.count,
      dropped: this.dropped,
      markers: this.markers,
      isMissing: this.isMissing,
      sklearnClasses: this.sklearnClasses,
    });
  }
}

function countLineBreaks(field: string): number {
  let count = 0;
  let at = field.indexOf('\n');
  while (at >= 0) {
    count++;
    at = field.indexOf('\n', at + 1);
  }
  if (count === 0 && field.indexOf('\r') >= 0) { // old Mac line ends
    at = field.indexOf('\r');
    while (at >= 0) {
      count++;
      at = field.indexOf('\r', at + 1);
    }
  }
  return count;
}

// ---- reading ----

/**
 * The first bytes of the file (decompressed when it is gzip: compressedText.ts) as text in its encoding
 * (textEncoding.ts; without a byte order mark); `whole` when that is all of it. A workbook or another binary
 * file is a DataError saying what to do.
 */
export async function readTextHead(
  file: string,
  byteCount = headBytes,
): Promise<{ text: string; whole: boolean; encoding: TextEncoding; gzip: boolean }> {
  const { bytes, whole, gzip } = await readHeadBytes(file, byteCount);
  const decoded = decodeTextHead(bytes);
  if ('problem' in decoded) throw new DataError(file, decoded.problem);
  return { ...decoded, whole, gzip };
}

function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** The file's encoding, delimiter, decimal mark and the lines above its rows, from its first 64 KiB. */
async function findFileShape(file: string, options: CsvOptions): Promise<FileShape> {
  const head = await readTextHead(file);
  if (head.text.trim() === '') throw new DataError(file, 'the file is empty');
  // Sniff complete lines only: the head of a large file ends mid-line.
  const cut = head.whole || head.text.lastIndexOf('\n') <= 0 ? head.text : head.text.slice(0, head.text.lastIndexOf('\n'));
  const given = { delimiter: options.delimiter !== undefined ? normaliseDelimiter(options.delimiter) : undefined, decimal: options.decimal };
  const { body: _rows, ...shape } = findHeadShape(cut, given, sniffDelimiter, headerSampleRows);
  return { encoding: head.encoding, gzip: head.gzip, ...shape };
}

/** Reads a CSV (or TSV, …) file into a dataset; see CsvOptions. Errors are DataErrors naming file, row and column. */
export async function loadCsv(file: string, options: CsvOptions = {}): Promise<CsvDataset> {
  if (options.limit !== undefined && !(Number.isInteger(options.limit) && options.limit > 0)) {
    throw new Error(`limit must be a positive integer, got ${options.limit}`);
  }
  const shape = await findFileShape(file, options);
  const { delimiter, comments } = shape;
  const reader = new CsvReader(file, shape, options);
  // numpy's header line stands in for a header row, on its own line number
  if (comments.names !== undefined) reader.record([...comments.names], comments.lines);

  await new Promise<void>((resolve, reject) => {
    const stream = openDataStream(file, shape.gzip, headBytes).setEncoding(shape.encoding);
    let settled = false;
    let nextRow = 1 + comments.lines;
    const finish = (error?: unknown) => {
      if (settled) return;
      settled = true;
      stream.destroy();
      if (error !== undefined) reject(error);
      else resolve();
    };
    stream.on('error', (error) => finish(dataStreamError(file, error)));
    Papa.parse<string[]>(stream, {
      delimiter,
      header: false,
      dynamicTyping: false,
      skipEmptyLines: false,
      comments: comments.lines > 0 ? '#' : false,
      beforeFirstChunk: stripBom,
      step: (results, parser) => {
        if (settled) return;
        const row = nextRow;
        try {
          const problem = results.errors.find((error) => error.type !== 'Delimiter');
          if (problem !== undefined) {
            throw new DataError(file, problem.code === 'MissingQuotes'
              ? 'a quoted field is never closed'
              : `malformed quotes (${problem.message})`, { row });
          }
          nextRow += 1 + reader.record(results.data, row);
          if (reader.done) {
            finish();
            parser.abort();
          }
        } catch (error) {
          finish(error);
          parser.abort();
        }
      },
      complete: () => finish(),
      error: (error) => finish(dataStreamError(file, error)),
    });
  });
  return reader.finish();
}
