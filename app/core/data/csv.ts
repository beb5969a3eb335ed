// CSV import (DESIGN §4): streamed through papaparse row by row, never read into one string.
//
// Rows and columns in messages are 1-based, as a user counts them in an editor or a spreadsheet:
// row = line number in the file (the header line is row 1), column = field number. Options that pick
// columns take a header name or a 0-based index (negative counts from the end: -1 is the last column).
import * as fs from 'node:fs';
import * as Papa from 'papaparse';
import { type Dataset, featureSize, formatShape } from './dataset';
import type { CsvEncoding, EncodedColumn } from './encoding';
import { DataError, fileError, listForMessage, quoteCell } from './errors';

export type ColumnRef = string | number;

export interface CsvOptions {
  /** Field delimiter; sniffed from the first rows when absent (`,` `;` tab `|`). `tab` and `\t` mean tab. */
  delimiter?: string;
  /** Whether the first row is a header; detected when absent (see `detectHeader`). */
  header?: boolean;
  /** Header name or 0-based index (negative from the end). Default: the last column. */
  labelColumn?: ColumnRef;
  /** The file has no label column (prediction input); labels are all -1. */
  unlabeled?: boolean;
  /** Columns one-hot encoded instead of parsed as numbers (categories sorted). */
  categorical?: readonly ColumnRef[];
  /** Columns left out entirely (ids, free text). */
  ignoreColumns?: readonly ColumnRef[];
  /** Known classes (a trained model's labels): every label must be one of them, in this order. */
  classLabels?: readonly string[];
  /** Reshape the features to [C,H,W]; the feature count must equal C*H*W. */
  imageShape?: readonly number[];
  /** Divide every feature by this (255 for pixel CSVs). */
  pixelScale?: number;
  /**
   * The encoding of the training data (from an earlier load or from the model file): the same columns,
   * categories, classes, image shape and pixel scale are applied, and the column options above are
   * ignored. With a header on both files columns are matched by name, otherwise by position.
   */
  encoding?: CsvEncoding;
  /** Stop after this many data rows (previews). */
  limit?: number;
}

export interface CsvDataset extends Dataset {
  encoding: CsvEncoding;
}

const headBytes = 64 * 1024;
const headerSampleRows = 200;
const maxFloat32 = 3.4028234663852886e38;

// ---- strict numbers ----

/**
 * Parses a decimal number strictly: optional sign, digits with an optional fraction, optional exponent,
 * surrounding spaces allowed. Returns NaN for anything else ('', 'abc', '1.2.3', '0x10', 'NaN', 'Infinity').
 */
export function parseStrictNumber(text: string): number {
  let start = 0;
  let end = text.length;
  while (start < end && isBlankChar(text.charCodeAt(start))) start++;
  while (end > start && isBlankChar(text.charCodeAt(end - 1))) end--;
  if (start === end) return NaN;
  let i = start;
  let code = text.charCodeAt(i);
  const negative = code === 45;
  if (code === 43 || code === 45) i++; // + -
  let digits = 0;
  let integer = 0;
  while (i < end && isDigit((code = text.charCodeAt(i)))) {
    integer = integer * 10 + (code - 48);
    i++;
    digits++;
  }
  // Fast path: plain integers of up to 15 digits are exact in a double (pixel CSVs are all such cells).
  if (i === end && digits > 0 && digits <= 15) return negative ? -integer : integer;
  if (i < end && text.charCodeAt(i) === 46) { // .
    i++;
    while (i < end && isDigit(text.charCodeAt(i))) { i++; digits++; }
  }
  if (digits === 0) return NaN;
  if (i < end && ((code = text.charCodeAt(i)) === 101 || code === 69)) { // e E
    i++;
    if (i < end && ((code = text.charCodeAt(i)) === 43 || code === 45)) i++;
    let exponentDigits = 0;
    while (i < end && isDigit(text.charCodeAt(i))) { i++; exponentDigits++; }
    if (exponentDigits === 0) return NaN;
  }
  if (i !== end) return NaN;
  return Number(text);
}

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

function isBlankChar(code: number): boolean {
  return code === 32 || code === 9;
}

function isNumberText(text: string): boolean {
  return !Number.isNaN(parseStrictNumber(text));
}

// ---- delimiter and header detection ----

const delimiterCandidates = [',', ';', '\t', '|'];

/**
 * Picks the delimiter that splits the sample's rows into the same number (> 1) of fields, preferring
 * more fields, then the order `,` `;` tab `|`. Falls back to the most consistent one, then to `,`.
 */
export function sniffDelimiter(sample: string): string {
  let best = ',';
  let bestScore = -Infinity;
  for (const delimiter of delimiterCandidates) {
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
 */
export function detectHeader(rows: readonly (readonly string[])[]): boolean {
  if (rows.length === 0) return false;
  const first = rows[0];
  const rest = rows.slice(1);
  let firstHasNumber = false;
  for (let column = 0; column < first.length; column++) {
    if (isNumberText(first[column])) {
      firstHasNumber = true;
      continue;
    }
    let filled = 0;
    let numeric = 0;
    for (const row of rest) {
      const cell = row[column];
      if (cell === undefined || cell.trim() === '') continue;
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

function isBlankRow(row: readonly string[]): boolean {
  return row.length === 1 && row[0].trim() === '';
}

function normaliseDelimiter(delimiter: string): string {
  if (delimiter === 'tab' || delimiter === '\\t') return '\t';
  if (delimiter.length === 0) throw new Error('the delimiter must not be empty');
  return delimiter;
}

// ---- value ordering (classes, categories) ----

/** Sorts distinct texts: numerically when all are numbers ("1" and "1.0" become one), else by code point. */
function orderValues(texts: readonly string[]): { ordered: string[]; rank: Int32Array } {
  const rank = new Int32Array(texts.length);
  if (texts.length > 0 && texts.every(isNumberText)) {
    const values = texts.map(Number);
    const distinct = [...new Set(values)].sort((a, b) => a - b);
    const position = new Map(distinct.map((value, index) => [value, index]));
    const ordered = new Array<string>(distinct.length);
    for (let id = 0; id < texts.length; id++) {
      const index = position.get(values[id])!;
      rank[id] = index;
      if (ordered[index] === undefined) ordered[index] = texts[id];
    }
    return { ordered, rank };
  }
  const ordered = [...texts].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const position = new Map(ordered.map((text, index) => [text, index]));
  for (let id = 0; id < texts.length; id++) rank[id] = position.get(texts[id])!;
  return { ordered, rank };
}

/** Looks a text up among known values: exactly, or by numeric value when both are numbers. */
function makeLookup(values: readonly string[]): (text: string) => number {
  const exact = new Map<string, number>();
  const numeric = new Map<number, number>();
  values.forEach((value, index) => {
    if (!exact.has(value)) exact.set(value, index);
    const number = parseStrictNumber(value);
    if (!Number.isNaN(number) && !numeric.has(number)) numeric.set(number, index);
  });
  return (text) => {
    const found = exact.get(text);
    if (found !== undefined) return found;
    const number = parseStrictNumber(text);
    return Number.isNaN(number) ? -1 : (numeric.get(number) ?? -1);
  };
}

// ---- growable typed buffers ----

class FloatBuffer {
  data = new Float32Array(4096);
  length = 0;
  reserve(extra: number): void {
    if (this.length + extra <= this.data.length) return;
    let capacity = this.data.length * 2;
    while (capacity < this.length + extra) capacity *= 2;
    const grown = new Float32Array(capacity);
    grown.set(this.data.subarray(0, this.length));
    this.data = grown;
  }
  trimmed(): Float32Array {
    return this.length === this.data.length ? this.data : this.data.slice(0, this.length);
  }
}

class IntBuffer {
  data = new Int32Array(1024);
  length = 0;
  push(value: number): void {
    if (this.length === this.data.length) {
      const grown = new Int32Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    this.data[this.length++] = value;
  }
  trimmed(): Int32Array {
    return this.data.slice(0, this.length);
  }
}

/** Distinct texts in first-seen order, each with an id. */
class TextIds {
  readonly ids = new Map<string, number>();
  readonly texts: string[] = [];
  id(text: string): number {
    let id = this.ids.get(text);
    if (id === undefined) {
      id = this.texts.length;
      this.ids.set(text, id);
      this.texts.push(text);
    }
    return id;
  }
}

// ---- column layout ----

interface NumericColumn {
  kind: 'numeric';
  source: number; // field index in this file
  name: string;
  slot: number; // position among the numeric columns
}

interface CategoricalColumn {
  kind: 'categorical';
  source: number;
  name: string;
  /** Known categories (evaluation): row value → category index, -1 when unseen. */
  lookup?: (text: string) => number;
  known?: readonly string[];
  seen: TextIds;
  values: IntBuffer; // per row: category index when known, else seen id
}

type LayoutColumn = NumericColumn | CategoricalColumn;

interface Layout {
  columnCount: number;
  names: string[]; // display name per field ('' without a header)
  labelIndex: number; // -1: unlabeled
  columns: LayoutColumn[]; // feature order
  numericSources: Int32Array;
  categorical: CategoricalColumn[];
  textSources: Int32Array; // fields that are not parsed as numbers (may hold quoted line breaks)
}

class CsvReader {
  private layout?: Layout;
  private hasHeader = false;
  private readonly sample: { fields: string[]; row: number }[] = [];
  private sampling = true;
  private readonly numbers = new FloatBuffer();
  private readonly labelIds = new IntBuffer();
  private readonly seenLabels = new TextIds();
  private readonly knownLabels?: readonly string[];
  private readonly labelLookup?: (text: string) => number;
  count = 0;
  done = false;

  constructor(
    private readonly file: string,
    private readonly delimiter: string,
    private readonly options: CsvOptions,
  ) {
    const encoding = options.encoding;
    const known = options.classLabels ?? (encoding !== undefined && encoding.label !== null ? encoding.classLabels : undefined);
    if (known !== undefined) {
      this.knownLabels = known;
      this.labelLookup = makeLookup(known);
    }
  }

  /** One record from the parser; `row` is its first line number. Returns the number of line breaks inside it. */
  record(fields: string[], row: number): number {
    if (this.sampling) {
      if (isBlankRow(fields)) return 0;
      this.sample.push({ fields, row });
      const breaks = fields.reduce((sum, field) => sum + countLineBreaks(field), 0);
      if (this.sample.length >= headerSampleRows) this.endSampling();
      return breaks;
    }
    if (isBlankRow(fields)) return 0;
    this.dataRow(fields, row);
    const textSources = this.layout!.textSources;
    let breaks = 0;
    for (let i = 0; i < textSources.length; i++) breaks += countLineBreaks(fields[textSources[i]]);
    return breaks;
  }

  private endSampling(): void {
    this.sampling = false;
    if (this.sample.length === 0) return;
    const rows = this.sample.map((entry) => entry.fields);
    this.hasHeader = this.options.header ?? detectHeader(rows);
    const first = this.sample[0];
    this.layout = this.buildLayout(first.fields, this.hasHeader);
    for (let i = this.hasHeader ? 1 : 0; i < this.sample.length && !this.done; i++) {
      this.dataRow(this.sample[i].fields, this.sample[i].row);
    }
    this.sample.length = 0;
  }

  private buildLayout(first: string[], hasHeader: boolean): Layout {
    const columnCount = first.length;
    const names = hasHeader ? first.map((name) => name.trim()) : new Array<string>(columnCount).fill('');
    const encoding = this.options.encoding;
    let labelIndex: number;
    let columns: LayoutColumn[];
    if (encoding !== undefined) {
      ({ labelIndex, columns } = this.layoutFromEncoding(encoding, names, hasHeader, columnCount));
    } else {
      ({ labelIndex, columns } = this.layoutFromOptions(names, hasHeader, columnCount));
    }
    let slot = 0;
    for (const column of columns) if (column.kind === 'numeric') column.slot = slot++;
    const numericSources = Int32Array.from(columns.filter((c) => c.kind === 'numeric').map((c) => c.source));
    const numeric = new Set(numericSources);
    const textSources = Int32Array.from([...Array(columnCount).keys()].filter((index) => !numeric.has(index)));
    const categorical = columns.filter((c): c is CategoricalColumn => c.kind === 'categorical');
    return { columnCount, names, labelIndex, columns, numericSources, categorical, textSources };
  }

  private layoutFromOptions(names: string[], hasHeader: boolean, columnCount: number) {
    const options = this.options;
    const resolve = (ref: ColumnRef, what: string) => resolveColumn(this.file, ref, names, hasHeader, what);
    const labelIndex = options.unlabeled ? -1 : resolve(options.labelColumn ?? -1, 'label column');
    const ignored = new Set((options.ignoreColumns ?? []).map((ref) => resolve(ref, 'ignored column')));
    const categorical = new Set((options.categorical ?? []).map((ref) => resolve(ref, 'categorical column')));
    if (categorical.has(labelIndex)) {
      throw new DataError(this.file, `the label column ${columnTitle(names, labelIndex)} cannot also be categorical (labels are classes already)`);
    }
    for (const index of categorical) {
      if (ignored.has(index)) throw new DataError(this.file, `column ${columnTitle(names, index)} is both ignored and categorical`);
    }
    const columns: LayoutColumn[] = [];
    for (let index = 0; index < columnCount; index++) {
      if (index === labelIndex || ignored.has(index)) continue;
      const name = featureName(names, index);
      columns.push(categorical.has(index)
        ? { kind: 'categorical', source: index, name, seen: new TextIds(), values: new IntBuffer() }
        : { kind: 'numeric', source: index, name, slot: 0 });
    }
    if (columns.length === 0) {
      throw new DataError(this.file, `no feature columns: the file has ${columnCount} column(s) and all are the label or ignored`);
    }
    return { labelIndex, columns };
  }

  private layoutFromEncoding(encoding: CsvEncoding, names: string[], hasHeader: boolean, columnCount: number) {
    const unlabeled = this.options.unlabeled === true || encoding.label === null;
    const toColumn = (encoded: EncodedColumn, source: number): LayoutColumn => encoded.kind === 'numeric'
      ? { kind: 'numeric', source, name: encoded.name, slot: 0 }
      : {
          kind: 'categorical', source, name: encoded.name, known: encoded.categories,
          lookup: makeLookup(encoded.categories), seen: new TextIds(), values: new IntBuffer(),
        };
    if (hasHeader && encoding.hasHeader) {
      // By header name; a column with an empty header cell (a pandas index) is known by its feature name, col<N>.
      const position = new Map<string, number>();
      names.forEach((name, index) => { if (!position.has(name)) position.set(name, index); });
      names.forEach((_, index) => { const name = featureName(names, index); if (!position.has(name)) position.set(name, index); });
      const find = (name: string, what: string): number => {
        const index = position.get(name);
        if (index === undefined) {
          throw new DataError(this.file, `${what} ${quoteCell(name, 60)} of the training data is missing (columns: ${listForMessage(names)})`);
        }
        return index;
      };
      const columns = encoding.columns.map((encoded) => toColumn(encoded, find(encoded.name, 'column')));
      let labelIndex = -1;
      if (!unlabeled && encoding.label !== null) {
        labelIndex = find(encoding.label.name, 'label column');
      }
      return { labelIndex, columns };
    }
    const labelSource = encoding.label?.index ?? -1;
    const dropsLabel = unlabeled && encoding.label !== null;
    const expected = encoding.columnCount - (dropsLabel ? 1 : 0);
    if (columnCount !== expected) {
      throw new DataError(this.file, `${columnCount} columns per row, but the training data had ${encoding.columnCount}` +
        (dropsLabel ? ' including the label column' : ''));
    }
    const shift = (index: number) => (dropsLabel && index > labelSource ? index - 1 : index);
    const columns = encoding.columns.map((encoded) => toColumn(encoded, shift(encoded.index)));
    return { labelIndex: unlabeled ? -1 : labelSource, columns };
  }

  private dataRow(fields: string[], row: number): void {
    if (this.done) return;
    if (isBlankRow(fields)) return;
    const layout = this.layout!;
    if (fields.length !== layout.columnCount) {
      throw new DataError(this.file, `${fields.length} field(s), expected ${layout.columnCount} like the ${this.hasHeader ? 'header' : 'first row'}`, { row });
    }
    const sources = layout.numericSources;
    const numbers = this.numbers;
    numbers.reserve(sources.length);
    const out = numbers.data;
    let at = numbers.length;
    for (let i = 0; i < sources.length; i++) {
      const text = fields[sources[i]];
      const value = parseStrictNumber(text);
      if (!(Math.abs(value) <= maxFloat32)) this.badNumber(text, value, row, sources[i]);
      out[at++] = value;
    }
    numbers.length = at;
    for (const column of layout.categorical) {
      const text = fields[column.source].trim();
      if (column.lookup !== undefined) {
        const index = column.lookup(text);
        if (index < 0) {
          throw new DataError(this.file, `category ${quoteCell(text)} was not seen in the training data (${listForMessage(column.known!)})`,
            this.place(row, column.source));
        }
        column.values.push(index);
      } else {
        column.values.push(column.seen.id(text));
      }
    }
    if (layout.labelIndex >= 0) {
      const text = fields[layout.labelIndex].trim();
      if (text === '') throw new DataError(this.file, 'the label is empty', this.place(row, layout.labelIndex));
      if (this.labelLookup !== undefined) {
        const index = this.labelLookup(text);
        if (index < 0) {
          throw new DataError(this.file, `label ${quoteCell(text)} is not one of the model's classes (${listForMessage(this.knownLabels!)})`,
            this.place(row, layout.labelIndex));
        }
        this.labelIds.push(index);
      } else {
        this.labelIds.push(this.seenLabels.id(text));
      }
    } else {
      this.labelIds.push(-1);
    }
    this.count++;
    if (this.options.limit !== undefined && this.count >= this.options.limit) this.done = true;
  }

  private badNumber(text: string, value: number, row: number, source: number): never {
    const detail = Number.isNaN(value)
      ? `${quoteCell(text)} is not a number${text.trim() === '' ? ' (empty cell)' : ''}`
      : `${quoteCell(text)} is out of the 32-bit float range`;
    throw new DataError(this.file, detail, this.place(row, source));
  }

  private place(row: number, source: number) {
    const name = this.layout!.names[source];
    return { row, column: source + 1, columnName: name === '' ? undefined : name };
  }

  finish(): CsvDataset {
    if (this.sampling) {
      if (this.sample.length === 0) throw new DataError(this.file, 'the file is empty');
      this.endSampling();
    }
    const layout = this.layout!;
    if (this.count === 0) {
      throw new DataError(this.file, this.hasHeader ? 'the file has a header row but no data rows' : 'the file has no data rows');
    }
    const count = this.count;
    const { labels, classLabels } = this.classes();
    const { encodedColumns, featureNames, categoryIndex } = this.featureColumns();
    const features = this.assembleFeatures(categoryIndex, featureNames.length);
    const { featureShape, imageShape, pixelScale } = this.scaleImages(features, featureNames.length);

    const encoding = this.options.encoding;
    const resultEncoding: CsvEncoding = encoding !== undefined
      ? { ...encoding, classLabels }
      : {
          hasHeader: this.hasHeader,
          delimiter: this.delimiter,
          columnCount: layout.columnCount,
          label: layout.labelIndex < 0 ? null : { name: layout.names[layout.labelIndex], index: layout.labelIndex },
          columns: encodedColumns,
          featureNames,
          classLabels,
          ...(imageShape !== undefined ? { imageShape: [imageShape[0], imageShape[1], imageShape[2]] as [number, number, number] } : {}),
          ...(pixelScale !== undefined ? { pixelScale } : {}),
        };
    return {
      features,
      labels,
      count,
      featureShape,
      featureNames,
      classLabels,
      source: this.file,
      ...(pixelScale !== undefined ? { pixelScale } : {}),
      encoding: resultEncoding,
    };
  }

  /** The class of every row and the class names: the known ones, or those seen in sorted order. */
  private classes(): { labels: Int32Array; classLabels: string[] } {
    const layout = this.layout!;
    if (layout.labelIndex < 0) return { labels: this.labelIds.trimmed(), classLabels: [...(this.knownLabels ?? [])] };
    if (this.knownLabels !== undefined) return { labels: this.labelIds.trimmed(), classLabels: [...this.knownLabels] };
    const { ordered, rank } = orderValues(this.seenLabels.texts);
    const labels = new Int32Array(this.count);
    const ids = this.labelIds.data;
    for (let i = 0; i < this.count; i++) labels[i] = rank[ids[i]];
    return { labels, classLabels: ordered };
  }

  /** The encoded columns and feature names; per categorical column, stored value → category index (null: stored values are indices already). */
  private featureColumns() {
    const encodedColumns: EncodedColumn[] = [];
    const featureNames: string[] = [];
    const categoryIndex = new Map<CategoricalColumn, { rank: Int32Array | null; width: number }>();
    for (const column of this.layout!.columns) {
      if (column.kind === 'numeric') {
        encodedColumns.push({ kind: 'numeric', name: column.name, index: column.source });
        featureNames.push(column.name);
        continue;
      }
      let categories: string[];
      if (column.known !== undefined) {
        categories = [...column.known];
        categoryIndex.set(column, { rank: null, width: categories.length });
      } else {
        const { ordered, rank } = orderValues(column.seen.texts);
        categories = ordered;
        categoryIndex.set(column, { rank, width: categories.length });
      }
      encodedColumns.push({ kind: 'categorical', name: column.name, index: column.source, categories });
      for (const category of categories) featureNames.push(`${column.name}=${category}`);
    }
    return { encodedColumns, featureNames, categoryIndex };
  }

  /** The numbers as parsed, or assembled with one-hot blocks in column order. */
  private assembleFeatures(categoryIndex: Map<CategoricalColumn, { rank: Int32Array | null; width: number }>, width: number): Float32Array {
    if (categoryIndex.size === 0) return this.numbers.trimmed();
    const layout = this.layout!;
    const features = new Float32Array(this.count * width);
    const numbers = this.numbers.data;
    const numericCount = layout.numericSources.length;
    let at = 0;
    for (let row = 0; row < this.count; row++) {
      for (const column of layout.columns) {
        if (column.kind === 'numeric') {
          features[at++] = numbers[row * numericCount + column.slot];
        } else {
          const { rank, width: categoryCount } = categoryIndex.get(column)!;
          const value = column.values.data[row];
          features[at + (rank === null ? value : rank[value])] = 1;
          at += categoryCount;
        }
      }
    }
    return features;
  }

  /** The image shape the features take (checked against their width) and the pixel scale, applied in place. */
  private scaleImages(features: Float32Array, width: number): { featureShape: number[]; imageShape?: readonly number[]; pixelScale?: number } {
    const encoding = this.options.encoding;
    const imageShape = encoding?.imageShape ?? this.options.imageShape;
    const pixelScale = encoding?.pixelScale ?? this.options.pixelScale;
    let featureShape = [width];
    if (imageShape !== undefined) {
      if (imageShape.length !== 3 || imageShape.some((dim) => !Number.isInteger(dim) || dim <= 0)) {
        throw new DataError(this.file, `image shape ${formatShape(imageShape)} is not [C,H,W] with positive integers`);
      }
      if (featureSize(imageShape) !== width) {
        throw new DataError(this.file, `image shape ${formatShape(imageShape)} needs ${featureSize(imageShape)} feature columns, found ${width}`);
      }
      featureShape = [...imageShape];
    }
    if (pixelScale !== undefined) {
      if (!(pixelScale > 0) || !Number.isFinite(pixelScale)) throw new DataError(this.file, `pixel scale ${pixelScale} must be a positive number`);
      const inverse = 1 / pixelScale;
      for (let i = 0; i < features.length; i++) features[i] *= inverse;
    }
    return { featureShape, imageShape, pixelScale };
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

function featureName(names: readonly string[], index: number): string {
  return names[index] !== '' ? names[index] : `col${index + 1}`;
}

function columnTitle(names: readonly string[], index: number): string {
  return names[index] !== '' ? `${quoteCell(names[index], 40)} (${index + 1})` : `${index + 1}`;
}

/** A column by header name (exact, then case-insensitive) or 0-based index (negative from the end). */
export function resolveColumn(file: string, ref: ColumnRef, names: readonly string[], hasHeader: boolean, what: string): number {
  const count = names.length;
  const byIndex = (index: number): number => {
    const resolved = index < 0 ? count + index : index;
    if (!Number.isInteger(index) || resolved < 0 || resolved >= count) {
      throw new DataError(file, `${what} index ${index} is outside the ${count} column(s) (0..${count - 1}, or -1..-${count} from the end)`);
    }
    return resolved;
  };
  if (typeof ref === 'number') return byIndex(ref);
  const wanted = ref.trim();
  if (hasHeader) {
    const exact = names.flatMap((name, index) => (name === wanted ? [index] : []));
    if (exact.length === 1) return exact[0];
    if (exact.length > 1) throw new DataError(file, `${what} "${wanted}" is ambiguous: ${exact.length} columns have that name; give its index`);
    const folded = names.flatMap((name, index) => (name.toLowerCase() === wanted.toLowerCase() ? [index] : []));
    if (folded.length === 1) return folded[0];
  }
  if (/^[+-]?\d+$/.test(wanted)) return byIndex(Number(wanted));
  if (!hasHeader) {
    throw new DataError(file, `the file has no header row, so the ${what} "${wanted}" cannot be found by name; give its 0-based index`);
  }
  throw new DataError(file, `no ${what} named "${wanted}" (columns: ${listForMessage([...names])})`);
}

// ---- reading ----

/** The first bytes of the file as text; `whole` when that is all of it. */
async function readHead(file: string): Promise<{ text: string; whole: boolean }> {
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(file, 'r');
  } catch (error) {
    throw fileError(file, error);
  }
  try {
    const buffer = Buffer.alloc(headBytes);
    const { bytesRead } = await handle.read(buffer, 0, headBytes, 0);
    return { text: buffer.subarray(0, bytesRead).toString('utf8'), whole: bytesRead < headBytes };
  } catch (error) {
    throw fileError(file, error);
  } finally {
    await handle.close();
  }
}

function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Reads a CSV (or TSV, …) file into a dataset; see CsvOptions. Errors are DataErrors naming file, row and column. */
export async function loadCsv(file: string, options: CsvOptions = {}): Promise<CsvDataset> {
  if (options.limit !== undefined && !(Number.isInteger(options.limit) && options.limit > 0)) {
    throw new Error(`limit must be a positive integer, got ${options.limit}`);
  }
  const head = await readHead(file);
  const headText = stripBom(head.text);
  if (headText.trim() === '') throw new DataError(file, 'the file is empty');
  // Sniff complete lines only: the head of a large file ends mid-line.
  const sample = head.whole || headText.lastIndexOf('\n') <= 0 ? headText : headText.slice(0, headText.lastIndexOf('\n'));
  const delimiter = options.delimiter !== undefined ? normaliseDelimiter(options.delimiter) : sniffDelimiter(sample);
  const reader = new CsvReader(file, delimiter, options);

  await new Promise<void>((resolve, reject) => {
    const stream = fs.createReadStream(file, { encoding: 'utf8', highWaterMark: headBytes });
    let settled = false;
    let nextRow = 1;
    const finish = (error?: unknown) => {
      if (settled) return;
      settled = true;
      stream.destroy();
      if (error !== undefined) reject(error);
      else resolve();
    };
    stream.on('error', (error) => finish(fileError(file, error)));
    Papa.parse<string[]>(stream, {
      delimiter,
      header: false,
      dynamicTyping: false,
      skipEmptyLines: false,
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
      error: (error) => finish(fileError(file, error)),
    });
  });
  return reader.finish();
}
