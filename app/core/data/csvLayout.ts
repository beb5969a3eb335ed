// Which field of a CSV row goes where (issue 13): from the user's options for a training file, or from the
// stored encoding for a later file. Decided once, from the header (or first) row.
import { TextColumn } from './columnStore';
import type { DatePart } from './dates';
import type { CsvEncoding, EncodedColumn } from './encoding';
import { DataError, listForMessage, quoteCell } from './errors';

export type ColumnRef = string | number;

/**
 * A column parsed number-first into the Float32 buffer. `infer`: its type is decided after the whole file;
 * `numeric`: a numeric column of a lenient encoding (other cells count as missing, with a note);
 * `strict`: an old encoding's numeric column or a pixel column (every cell must be a number).
 */
export interface ScannedFeature {
  kind: 'scanned';
  source: number;
  name: string;
  slot: number;
  mode: 'infer' | 'numeric' | 'strict';
  /** Left out as asked (ignoreColumns), read only for the column report. */
  ignored?: boolean;
}

/** A column kept as text ids: categorical (one-hot) or a date. Known categories come from an encoding. */
export interface TextFeature {
  kind: 'text';
  source: number;
  name: string;
  column: TextColumn;
  as: 'categorical' | 'date';
  categories?: readonly string[];
  other?: boolean;
  parts?: readonly DatePart[];
  strict: boolean;
}

export type PlannedColumn = ScannedFeature | TextFeature;

export interface TargetColumn {
  source: number;
  name: string;
  column: TextColumn;
}

export interface Layout {
  columnCount: number;
  names: string[]; // display name per field ('' without a header)
  targets: TargetColumn[]; // [] for unlabeled data; one for classification
  /** Regression fixed by an encoding or by several target columns; undefined: inferred or from options. */
  regression?: boolean;
  columns: PlannedColumn[]; // feature order
  scanSources: Int32Array; // by slot
  /** By slot: 1 where every cell must be a number (missing markers included: they are problems too). */
  strictSlots: Uint8Array;
  /** Some scanned column's type is inferred: gather min, max, sum per column while reading. */
  inferred: boolean;
  textFeatures: TextFeature[];
  textSources: Int32Array; // fields not parsed as numbers (may hold quoted line breaks)
}

export interface LayoutOptions {
  labelColumn?: ColumnRef;
  targetColumns?: readonly ColumnRef[];
  unlabeled?: boolean;
  categorical?: readonly ColumnRef[];
  ignoreColumns?: readonly ColumnRef[];
  imageShape?: readonly number[];
  task?: 'classification' | 'regression';
  /** Read the ignored columns too, for the column report. */
  report?: boolean;
}

export function featureName(names: readonly string[], index: number): string {
  return names[index] !== '' ? names[index] : `col${index + 1}`;
}

export function columnTitle(names: readonly string[], index: number): string {
  return names[index] !== '' ? `${quoteCell(names[index], 40)} (${index + 1})` : `${index + 1}`;
}

function finishLayout(columnCount: number, names: string[], targets: TargetColumn[], columns: PlannedColumn[], regression?: boolean): Layout {
  let slot = 0;
  for (const column of columns) if (column.kind === 'scanned') column.slot = slot++;
  const scanned = columns.filter((column): column is ScannedFeature => column.kind === 'scanned');
  const scanSources = Int32Array.from(scanned.map((column) => column.source));
  const strictSlots = Uint8Array.from(scanned.map((column) => (column.mode === 'strict' ? 1 : 0)));
  const numeric = new Set(scanSources);
  const textSources = Int32Array.from([...Array(columnCount).keys()].filter((index) => !numeric.has(index)));
  const textFeatures = columns.filter((column): column is TextFeature => column.kind === 'text');
  const inferred = scanned.some((column) => column.mode === 'infer');
  return { columnCount, names, targets, regression, columns, scanSources, strictSlots, inferred, textFeatures, textSources };
}

/** The layout of a training file: label or target columns, ignored and categorical columns as given. */
export function layoutFromOptions(file: string, options: LayoutOptions, names: string[], hasHeader: boolean): Layout {
  const columnCount = names.length;
  const resolve = (ref: ColumnRef, what: string) => resolveColumn(file, ref, names, hasHeader, what);
  let targetIndices: number[] = [];
  if (!options.unlabeled) {
    if (options.targetColumns !== undefined && options.targetColumns.length > 0) {
      if (options.task === 'classification' && options.targetColumns.length > 1) {
        throw new DataError(file, 'several target columns need --task regression (a classifier has one label column)');
      }
      targetIndices = options.targetColumns.map((ref) => resolve(ref, 'target column'));
      const repeated = targetIndices.find((index, i) => targetIndices.indexOf(index) !== i);
      if (repeated !== undefined) throw new DataError(file, `target column ${columnTitle(names, repeated)} is given twice`);
    } else {
      targetIndices = [resolve(options.labelColumn ?? -1, 'label column')];
    }
  }
  const ignored = new Set((options.ignoreColumns ?? []).map((ref) => resolve(ref, 'ignored column')));
  const categorical = new Set((options.categorical ?? []).map((ref) => resolve(ref, 'categorical column')));
  for (const index of targetIndices) {
    if (categorical.has(index)) {
      throw new DataError(file, `the label column ${columnTitle(names, index)} cannot also be categorical (labels are classes already)`);
    }
  }
  for (const index of categorical) {
    if (ignored.has(index)) throw new DataError(file, `column ${columnTitle(names, index)} is both ignored and categorical`);
  }
  const targets = targetIndices.map((index) => ({ source: index, name: featureName(names, index), column: new TextColumn() }));
  const targetSet = new Set(targetIndices);
  const pixels = options.imageShape !== undefined;
  const columns: PlannedColumn[] = [];
  for (let index = 0; index < columnCount; index++) {
    if (targetSet.has(index)) continue;
    const name = featureName(names, index);
    if (ignored.has(index)) {
      if (options.report) columns.push({ kind: 'scanned', source: index, name, slot: 0, mode: 'infer', ignored: true });
      continue;
    }
    columns.push(categorical.has(index)
      ? { kind: 'text', source: index, name, column: new TextColumn(), as: 'categorical', strict: false }
      : { kind: 'scanned', source: index, name, slot: 0, mode: pixels ? 'strict' : 'infer' });
  }
  if (columns.every((column) => column.kind === 'scanned' && column.ignored)) {
    throw new DataError(file, `no feature columns: the file has ${columnCount} column(s) and all are the label or ignored`);
  }
  const regression = targetIndices.length > 1 ? true : undefined;
  return finishLayout(columnCount, names, targets, columns, regression);
}

/** The layout of a later file read through a stored encoding: by header name when both have one, else by position. */
export function layoutFromEncoding(file: string, encoding: CsvEncoding, unlabeledWanted: boolean, names: string[], hasHeader: boolean): Layout {
  const columnCount = names.length;
  const strict = encoding.missingMarkers === undefined;
  const stored = encoding.targets ?? (encoding.label !== null ? [encoding.label] : []);
  const unlabeled = unlabeledWanted || stored.length === 0;
  const regression = encoding.task === 'regression';
  const toColumn = (encoded: EncodedColumn, source: number): PlannedColumn => {
    switch (encoded.kind) {
      case 'numeric':
        return { kind: 'scanned', source, name: encoded.name, slot: 0, mode: strict || encoding.imageShape !== undefined ? 'strict' : 'numeric' };
      case 'categorical':
        return {
          kind: 'text', source, name: encoded.name, column: new TextColumn(), as: 'categorical',
          categories: encoded.categories, other: encoded.other, strict,
        };
      case 'date':
        return { kind: 'text', source, name: encoded.name, column: new TextColumn(), as: 'date', parts: encoded.parts, strict };
    }
  };
  const target = (source: number) => ({ source, name: featureName(names, source), column: new TextColumn() });
  if (hasHeader && encoding.hasHeader) {
    // By header name; a column with an empty header cell (a pandas index) is known by its feature name,
    // col<N>. Where a name occurs twice, the stored position decides among the columns of that name.
    const positions = new Map<string, number[]>();
    const remember = (name: string, index: number) => {
      const list = positions.get(name) ?? [];
      if (!list.includes(index)) list.push(index);
      positions.set(name, list);
    };
    names.forEach((name, index) => remember(name, index));
    names.forEach((_, index) => remember(featureName(names, index), index));
    const find = (name: string, storedIndex: number, what: string): number => {
      const found = positions.get(name);
      if (found === undefined) {
        throw new DataError(file, `${what} ${quoteCell(name, 60)} of the training data is missing (columns: ${listForMessage(names)})`);
      }
      return found.includes(storedIndex) ? storedIndex : found[0];
    };
    const columns = encoding.columns.map((encoded) => toColumn(encoded, find(encoded.name, encoded.index, 'column')));
    const targets = unlabeled ? [] : stored.map((column) => target(find(column.name, column.index, regression ? 'target column' : 'label column')));
    return finishLayout(columnCount, names, targets, columns, regression);
  }
  const dropped = unlabeled ? stored.map((column) => column.index) : [];
  const expected = encoding.columnCount - dropped.length;
  if (columnCount !== expected) {
    throw new DataError(file, `${columnCount} columns per row, but the training data had ${encoding.columnCount}` +
      (dropped.length > 0 ? ` including the ${dropped.length === 1 ? 'label column' : 'target columns'}` : ''));
  }
  const shift = (index: number) => index - dropped.filter((gone) => gone < index).length;
  const columns = encoding.columns.map((encoded) => toColumn(encoded, shift(encoded.index)));
  const targets = unlabeled ? [] : stored.map((column) => target(column.index));
  return finishLayout(columnCount, names, targets, columns, regression);
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
