// The end of a CSV load (issue 13): with every row read, decide what each column is, check the cells the
// decisions make wrong (all problems at once), and assemble the features, labels or targets, encoding and
// notes. The first-pass storage is in columnStore.ts; the rules in columnReport.ts and task.ts.
import {
  formatCount, groupedNotes, inferColumn, maxCategories, reportColumn,
  type ColumnDecision, type ColumnProfile, type ColumnReport, type ColumnType,
} from './columnReport';
import { scannedAsText, type ScannedColumns, type TextColumn } from './columnStore';
import type { CsvDataset, CsvRead } from './csv';
import { columnTitle, type ScannedFeature, type TextFeature } from './csvLayout';
import { featureSize, formatShape } from './dataset';
import { datePart, parseDate, type DatePart } from './dates';
import type { CsvEncoding, EncodedColumn } from './encoding';
import { DataError, listForMessage, quoteCell } from './errors';
import { makeLookup, maxFloat32, orderValues, parseStrictNumber } from './numbers';
import { checkClasses, inferTask, type Task } from './task';

// ---- cell problems, reported together ----

interface CellProblem {
  line: number;
  source: number;
  detail: string;
}

const problemsShown = 5;
const examplesPerColumn = 3;

/** Cell problems gathered over all columns; thrown as one DataError naming the first and counting the rest. */
class CellProblems {
  private readonly list: CellProblem[] = [];
  total = 0;
  constructor(private readonly read: CsvRead) {}

  add(line: number, source: number, detail: string): void {
    this.total++;
    if (this.list.length < 50) this.list.push({ line, source, detail });
  }

  throwIfAny(): void {
    if (this.total === 0) return;
    const names = this.read.layout.names;
    const sorted = [...this.list].sort((a, b) => a.line - b.line || a.source - b.source);
    const first = sorted[0];
    const place = { row: first.line, column: first.source + 1, columnName: names[first.source] === '' ? undefined : names[first.source] };
    let detail = first.detail;
    if (this.total > 1) {
      // The others as long as the message stays short (names and cells are quoted, so may be long).
      const more: string[] = [];
      let length = detail.length;
      for (const problem of sorted.slice(1, problemsShown)) {
        const text = `row ${problem.line}, column ${columnTitle(names, problem.source)}: ${problem.detail}`;
        if (length + text.length > 600) break;
        more.push(text);
        length += text.length;
      }
      const rest = more.length < this.total - 1 ? '; …' : '';
      detail += ` (${formatCount(this.total)} cell problems in all${more.length > 0 ? `; also ${more.join('; ')}` : ''}${rest})`;
    }
    throw new DataError(this.read.file, detail, place);
  }
}

// ---- profiles ----

function scannedProfile(read: CsvRead, slot: number, name: string, index: number): ColumnProfile {
  const scan = read.scan;
  const texts = scan.texts[slot];
  const textCells = scan.textCells(slot);
  return {
    name, index, rows: read.count, missing: scan.missing[slot],
    numberCells: read.count - scan.missing[slot] - textCells,
    min: scan.min[slot], max: scan.max[slot], sum: scan.sum[slot], fractional: scan.fractional[slot] === 1,
    texts: texts?.ids.texts ?? [],
    textCounts: texts === undefined ? [] : Array.from(texts.ids.counts.data.subarray(0, texts.ids.texts.length)),
    values: () => scan.column(slot, read.count),
  };
}

/** A text column's profile: its number-like texts count as numbers. */
function textProfile(column: TextColumn, name: string, index: number, rows: number): ColumnProfile {
  const texts: string[] = [];
  const textCounts: number[] = [];
  const valueOf = new Float64Array(column.ids.texts.length);
  let numberCells = 0;
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  let fractional = false;
  column.ids.texts.forEach((text, id) => {
    const count = column.ids.counts.data[id];
    const value = parseStrictNumber(text);
    valueOf[id] = Math.abs(value) <= maxFloat32 ? value : NaN;
    if (Number.isNaN(valueOf[id])) {
      texts.push(text);
      textCounts.push(count);
      return;
    }
    numberCells += count;
    min = Math.min(min, value);
    max = Math.max(max, value);
    sum += value * count;
    if (!Number.isInteger(value)) fractional = true;
  });
  const values = () => {
    const out = new Float32Array(rows);
    for (let row = 0; row < rows; row++) {
      const id = column.rows.data[row];
      out[row] = id < 0 ? NaN : valueOf[id];
    }
    return out;
  };
  return { name, index, rows, missing: column.missing, numberCells, min, max, sum, fractional, texts, textCounts, values };
}

// ---- features ----

/** How one kept column writes its features into a row. */
type Writer =
  | { kind: 'copy'; slot: number }
  | { kind: 'onehot'; rowIds: Int32Array; width: number } // category per row, -1: all zeros
  | { kind: 'parts'; rowIds: Int32Array; values: Float32Array; width: number }; // text id per row, -1: missing

interface ColumnOutcome {
  source: number;
  name: string;
  decision: ColumnDecision;
  profile: ColumnProfile;
  encoded?: EncodedColumn;
  featureNames: string[];
  writer?: Writer;
  notes: string[];
  /** Left out as asked (ignoreColumns); present only for the column report. */
  ignored?: boolean;
}

/** Every problem or note about one column's cells names a few rows, so the user can find them. */
function exampleRows(read: CsvRead, slot: number): string {
  const texts = read.scan.texts[slot]!;
  const shown: string[] = [];
  for (let i = 0; i < Math.min(examplesPerColumn, texts.rows.length); i++) {
    shown.push(`row ${read.lines.data[texts.rows.data[i]]}: ${quoteCell(texts.ids.texts[texts.cells.data[i]], 20)}`);
  }
  return shown.join(', ') + (texts.rows.length > examplesPerColumn ? ', …' : '');
}

function numericOutcome(read: CsvRead, column: ScannedFeature, profile: ColumnProfile, decision: ColumnDecision): ColumnOutcome {
  const notes: string[] = [];
  if (decision.note !== undefined) notes.push(decision.note);
  const textCells = read.scan.textCells(column.slot);
  if (textCells > 0) {
    notes.push(`${formatCount(textCells)} cell${textCells === 1 ? ' is' : 's are'} not a number and read as missing (${exampleRows(read, column.slot)})`);
  }
  return {
    source: column.source, name: column.name, decision, profile, notes,
    encoded: { kind: 'numeric', name: column.name, index: column.source },
    featureNames: [column.name],
    writer: { kind: 'copy', slot: column.slot },
  };
}

/** Strict columns (old encodings, pixel CSVs): every cell that is not a number is a problem. */
function strictProblems(read: CsvRead, column: ScannedFeature, problems: CellProblems): void {
  const texts = read.scan.texts[column.slot];
  if (texts === undefined) return;
  for (let i = 0; i < texts.rows.length; i++) {
    const text = texts.ids.texts[texts.cells.data[i]];
    const value = parseStrictNumber(text);
    const detail = Number.isNaN(value)
      ? `${quoteCell(text)} is not a number${text === '' ? ' (empty cell)' : ''}`
      : `${quoteCell(text)} is out of the 32-bit float range`;
    problems.add(read.lines.data[texts.rows.data[i]], column.source, detail);
  }
}

/** Categories for a training column: all, or the most frequent `maxCategories` plus "other" (a warning). */
function chooseCategories(texts: readonly string[], counts: readonly number[]): { categories: string[]; other: boolean; note?: string } {
  if (texts.length <= maxCategories) return { categories: orderValues(texts).ordered, other: false };
  const { rank } = orderValues(texts);
  const byFrequency = texts.map((_, id) => id).sort((a, b) => counts[b] - counts[a] || rank[a] - rank[b]);
  const kept = byFrequency.slice(0, maxCategories);
  const keptCells = kept.reduce((sum, id) => sum + counts[id], 0);
  const allCells = counts.reduce((sum, count) => sum + count, 0);
  return {
    categories: orderValues(kept.map((id) => texts[id])).ordered,
    other: true,
    note: `${formatCount(texts.length)} distinct values: the ${maxCategories} most frequent are kept (${((100 * keptCells) / allCells).toFixed(1)} % of the cells), the rest become "other"`,
  };
}

/** A categorical column's features from its text ids: one-hot over `categories` (+ other). */
function categoricalOutcome(
  read: CsvRead, problems: CellProblems, base: { source: number; name: string; decision: ColumnDecision; profile: ColumnProfile },
  texts: readonly string[], counts: readonly number[], rowIds: Int32Array, known: { categories: readonly string[]; other: boolean; strict: boolean } | undefined,
): ColumnOutcome {
  const notes: string[] = [];
  let categories: readonly string[];
  let other: boolean;
  if (known === undefined && texts.length === 0) {
    return { ...base, decision: { type: 'empty', use: 'leave out', note: 'every cell is missing' }, featureNames: [], notes: [] };
  }
  if (known === undefined) {
    const chosen = chooseCategories(texts, counts);
    ({ categories, other } = chosen);
    if (chosen.note !== undefined) notes.push(chosen.note);
  } else {
    ({ categories, other } = known);
  }
  const lookup = makeLookup(categories);
  const otherIndex = other ? categories.length : -1;
  const indexOf = Int32Array.from(texts, (text) => lookup(text));
  let unseen = 0;
  const unseenExamples = new Set<string>();
  const categoryOf = new Int32Array(read.count);
  let missing = 0;
  for (let row = 0; row < read.count; row++) {
    const id = rowIds[row];
    if (id < 0) {
      missing++;
      categoryOf[row] = -1;
      continue;
    }
    const index = indexOf[id];
    if (index >= 0) {
      categoryOf[row] = index;
      continue;
    }
    categoryOf[row] = otherIndex;
    if (otherIndex >= 0) continue;
    unseen++;
    if (known?.strict) {
      problems.add(read.lines.data[row], base.source, `category ${quoteCell(texts[id])} was not seen in the training data (${listForMessage(categories)})`);
    } else if (unseenExamples.size < examplesPerColumn) {
      unseenExamples.add(quoteCell(texts[id], 20));
    }
  }
  if (unseen > 0 && !known?.strict) {
    notes.push(`${formatCount(unseen)} cell${unseen === 1 ? '' : 's'} with a category not seen in training (${[...unseenExamples].join(', ')}) get all-zero features`);
  }
  if (missing > 0 && known !== undefined && !known.strict) notes.push(`${formatCount(missing)} missing cell${missing === 1 ? '' : 's'} get all-zero features`);
  const featureNames = categories.map((category) => `${base.name}=${category}`);
  if (other) featureNames.push(`${base.name}=(other)`);
  return {
    ...base, notes,
    encoded: { kind: 'categorical', name: base.name, index: base.source, categories: [...categories], ...(other ? { other: true as const } : {}) },
    featureNames,
    writer: { kind: 'onehot', rowIds: categoryOf, width: featureNames.length },
  };
}

/** A date column's features: the parts of each distinct text, NaN (missing) where a cell is not a date. */
function dateOutcome(
  read: CsvRead, base: { source: number; name: string; decision: ColumnDecision; profile: ColumnProfile },
  texts: readonly string[], rowIds: Int32Array, knownParts: readonly DatePart[] | undefined,
): ColumnOutcome {
  const dates = texts.map(parseDate);
  const parts: DatePart[] = knownParts !== undefined ? [...knownParts]
    : ['year', 'month', 'day', 'weekday', ...(dates.some((date) => date?.hour !== undefined) ? ['hour' as const] : [])];
  const values = new Float32Array(texts.length * parts.length).fill(NaN);
  dates.forEach((date, id) => {
    if (date !== undefined) parts.forEach((part, p) => { values[id * parts.length + p] = datePart(date, part); });
  });
  let notDates = 0;
  for (let row = 0; row < read.count; row++) if (rowIds[row] >= 0 && dates[rowIds[row]] === undefined) notDates++;
  const notes = notDates > 0 ? [`${formatCount(notDates)} cell${notDates === 1 ? ' is' : 's are'} not a date and read as missing`] : [];
  return {
    ...base, notes,
    encoded: { kind: 'date', name: base.name, index: base.source, parts },
    featureNames: parts.map((part) => `${base.name}.${part}`),
    writer: { kind: 'parts', rowIds, values, width: parts.length },
  };
}

/** What becomes of a date column when the options do not say. */
export const defaultDates: 'parts' | 'ignore' = 'ignore';

function scannedOutcome(read: CsvRead, column: ScannedFeature, problems: CellProblems): ColumnOutcome {
  const profile = scannedProfile(read, column.slot, column.name, column.source);
  if (column.mode === 'strict') {
    strictProblems(read, column, problems);
    return numericOutcome(read, column, profile, { type: 'numeric', use: 'numeric' });
  }
  if (column.mode === 'numeric') return numericOutcome(read, column, profile, { type: 'numeric', use: 'numeric' });
  let decision = inferColumn(profile);
  // Dates are left out unless asked for: measured on the tabular suite (docs/results/issue13-tabular-suite.md), four
  // parts of a date unrelated to the target cost up to 3.5 points; a user whose dates matter says --dates parts.
  if (decision.use === 'date' && (read.options.dates ?? defaultDates) === 'ignore') {
    decision = { type: 'date', use: 'leave out', note: 'a date column; its year, month, day and weekday can be used instead' };
  }
  const base = { source: column.source, name: column.name, decision, profile };
  switch (decision.use) {
    case 'numeric':
      return numericOutcome(read, column, profile, decision);
    case 'leave out':
      return { ...base, featureNames: [], notes: decision.note !== undefined ? [decision.note] : [] };
    case 'categorical': {
      const { texts, counts, rowIds } = scannedAsText(read.scan, column.slot, read.count);
      return categoricalOutcome(read, problems, base, texts, counts, rowIds, undefined);
    }
    case 'date': {
      const { texts, rowIds } = scannedAsText(read.scan, column.slot, read.count);
      return dateOutcome(read, base, texts, rowIds, undefined);
    }
  }
}

function textOutcome(read: CsvRead, column: TextFeature, problems: CellProblems): ColumnOutcome {
  const profile = textProfile(column.column, column.name, column.source, read.count);
  const rowIds = column.column.rows.data.subarray(0, read.count);
  const texts = column.column.ids.texts;
  if (column.as === 'date') {
    return dateOutcome(read, { source: column.source, name: column.name, decision: { type: 'date', use: 'date' }, profile }, texts, rowIds, column.parts);
  }
  const decision: ColumnDecision = { type: 'categorical', use: 'categorical' };
  const counts = Array.from(column.column.ids.counts.data.subarray(0, texts.length));
  const known = column.categories !== undefined ? { categories: column.categories, other: column.other === true, strict: column.strict } : undefined;
  return categoricalOutcome(read, problems, { source: column.source, name: column.name, decision, profile }, texts, counts, rowIds, known);
}

/** Features row by row from the writers; the Float32 buffer itself when every column is a plain number. */
function assemble(read: CsvRead, writers: readonly Writer[], width: number): Float32Array {
  const scan: ScannedColumns = read.scan;
  const plain = writers.length === scan.width && writers.every((writer, i) => writer.kind === 'copy' && writer.slot === i);
  if (plain) return scan.numbers.trimmed();
  const features = new Float32Array(read.count * width);
  const numbers = scan.numbers.data;
  let at = 0;
  for (let row = 0; row < read.count; row++) {
    const base = row * scan.width;
    for (const writer of writers) {
      if (writer.kind === 'copy') {
        features[at++] = numbers[base + writer.slot];
      } else if (writer.kind === 'onehot') {
        const index = writer.rowIds[row];
        if (index >= 0) features[at + index] = 1;
        at += writer.width;
      } else {
        const id = writer.rowIds[row];
        for (let p = 0; p < writer.width; p++) features[at + p] = id < 0 ? NaN : writer.values[id * writer.width + p];
        at += writer.width;
      }
    }
  }
  return features;
}

// ---- labels and targets ----

interface TargetOutcome {
  task: Task;
  taskReason?: string;
  labels: Int32Array;
  classLabels: string[];
  targets?: Float32Array;
  targetNames?: string[];
  notes: string[];
}

function unlabeledOutcome(read: CsvRead): TargetOutcome {
  const encoding = read.options.encoding;
  const task = encoding?.task ?? read.options.task ?? 'classification';
  const classLabels = [...(read.options.classLabels ?? (encoding?.label != null ? encoding.classLabels : []))];
  const targetNames = encoding?.targets?.map((target) => target.name);
  return { task, labels: new Int32Array(read.count).fill(-1), classLabels: task === 'regression' ? [] : classLabels, ...(targetNames ? { targetNames } : {}), notes: [] };
}

function regressionOutcome(read: CsvRead, problems: CellProblems, reason: string | undefined): TargetOutcome {
  const targets = read.layout.targets;
  const width = targets.length;
  const values = new Float32Array(read.count * width);
  targets.forEach((target, t) => {
    const valueOf = target.column.ids.texts.map((text) => {
      const value = parseStrictNumber(text);
      return Math.abs(value) <= maxFloat32 ? value : NaN;
    });
    for (let row = 0; row < read.count; row++) {
      const value = valueOf[target.column.rows.data[row]];
      if (Number.isNaN(value)) {
        problems.add(read.lines.data[row], target.source,
          `target ${quoteCell(target.column.ids.texts[target.column.rows.data[row]])} is not a number (the task is regression)`);
      }
      values[row * width + t] = value;
    }
  });
  return {
    task: 'regression', ...(reason !== undefined ? { taskReason: reason } : {}),
    labels: new Int32Array(read.count).fill(-1), classLabels: [], targets: values, targetNames: targets.map((target) => target.name), notes: [],
  };
}

function knownClassesOutcome(read: CsvRead, problems: CellProblems, known: readonly string[]): TargetOutcome {
  const target = read.layout.targets[0];
  const lookup = makeLookup(known);
  const indexOf = target.column.ids.texts.map((text) => lookup(text));
  const labels = new Int32Array(read.count);
  for (let row = 0; row < read.count; row++) {
    const id = target.column.rows.data[row];
    labels[row] = indexOf[id];
    if (indexOf[id] < 0) {
      problems.add(read.lines.data[row], target.source,
        `label ${quoteCell(target.column.ids.texts[id])} is not one of the model's classes (${listForMessage(known)})`);
    }
  }
  return { task: 'classification', labels, classLabels: [...known], notes: [] };
}

function targetOutcome(read: CsvRead, problems: CellProblems): TargetOutcome {
  const { layout, options } = read;
  if (layout.targets.length === 0) return unlabeledOutcome(read);
  const encoding = options.encoding;
  if (encoding !== undefined) {
    return encoding.task === 'regression' ? regressionOutcome(read, problems, undefined) : knownClassesOutcome(read, problems, encoding.classLabels);
  }
  const target = layout.targets[0];
  if (layout.regression) {
    return regressionOutcome(read, problems, `${layout.targets.map((column) => column.name).join(', ')}: ${layout.targets.length} target columns → regression`);
  }
  if (options.classLabels !== undefined) return knownClassesOutcome(read, problems, options.classLabels);
  const texts = target.column.ids.texts;
  const counts = Array.from(target.column.ids.counts.data.subarray(0, texts.length));
  const choice = inferTask(target.name, texts, options.task, counts);
  if (choice.task === 'regression') return regressionOutcome(read, problems, choice.reason);
  const { ordered, rank } = orderValues(texts);
  const classCounts = new Array<number>(ordered.length).fill(0);
  counts.forEach((count, id) => { classCounts[rank[id]] += count; });
  const check = checkClasses(quoteCell(target.name, 60), ordered, classCounts);
  if (check.refusal !== undefined) throw new DataError(read.file, check.refusal);
  const labels = new Int32Array(read.count);
  for (let row = 0; row < read.count; row++) labels[row] = rank[target.column.rows.data[row]];
  return { task: 'classification', taskReason: choice.reason, labels, classLabels: ordered, notes: check.warnings };
}

// ---- images ----

/** The image shape the features take (checked against their width) and the pixel scale, applied in place. */
function scaleImages(read: CsvRead, features: Float32Array, width: number): { featureShape: number[]; imageShape?: readonly number[]; pixelScale?: number } {
  const encoding = read.options.encoding;
  const imageShape = encoding?.imageShape ?? read.options.imageShape;
  const pixelScale = encoding?.pixelScale ?? read.options.pixelScale;
  let featureShape = [width];
  if (imageShape !== undefined) {
    if (imageShape.length !== 3 || imageShape.some((dim) => !Number.isInteger(dim) || dim <= 0)) {
      throw new DataError(read.file, `image shape ${formatShape(imageShape)} is not [C,H,W] with positive integers`);
    }
    if (featureSize(imageShape) !== width) {
      throw new DataError(read.file, `image shape ${formatShape(imageShape)} needs ${featureSize(imageShape)} feature columns, found ${width}`);
    }
    featureShape = [...imageShape];
  }
  if (pixelScale !== undefined) {
    if (!(pixelScale > 0) || !Number.isFinite(pixelScale)) throw new DataError(read.file, `pixel scale ${pixelScale} must be a positive number`);
    let largest = 0;
    for (let i = 0; i < features.length; i++) {
      const size = Math.abs(features[i]);
      if (size > largest) largest = size;
    }
    // Checked before dividing: a tiny scale would turn every value into Infinity.
    if (largest / pixelScale > maxFloat32) {
      throw new DataError(read.file, `pixel scale ${pixelScale} is too small: ${largest} / ${pixelScale} is beyond the 32-bit float range (use 255 for 0-255 pixels, 1 to keep the values)`);
    }
    const inverse = 1 / pixelScale;
    if (Number.isFinite(inverse)) {
      for (let i = 0; i < features.length; i++) features[i] *= inverse;
    } else {
      for (let i = 0; i < features.length; i++) features[i] /= pixelScale;
    }
  }
  return { featureShape, imageShape, pixelScale };
}

// ---- the dataset ----

export function finishCsv(read: CsvRead): CsvDataset {
  const { file, layout } = read;
  if (read.count === 0) {
    if (read.dropped.count > 0) {
      throw new DataError(file, `every row's ${layout.targets.length > 1 ? 'targets are' : 'label is'} missing (${formatCount(read.dropped.count)} rows, e.g. row ${read.dropped.lines[0]})`);
    }
    throw new DataError(file, read.hasHeader ? 'the file has a header row but no data rows' : 'the file has no data rows');
  }
  const problems = new CellProblems(read);
  const target = targetOutcome(read, problems);
  const outcomes = layout.columns.map((column) => column.kind === 'scanned'
    ? { ...scannedOutcome(read, column, problems), ignored: column.ignored === true }
    : textOutcome(read, column, problems));
  problems.throwIfAny();
  keepSomething(read, outcomes);
  const kept = outcomes.filter((outcome) => outcome.writer !== undefined && !outcome.ignored);
  if (kept.length === 0) {
    throw new DataError(file, `no feature columns left: ${groupedNotes(leftOut(outcomes)).join('; ')}`);
  }
  const featureNames = kept.flatMap((outcome) => outcome.featureNames);
  const features = assemble(read, kept.map((outcome) => outcome.writer!), featureNames.length);
  const { featureShape, imageShape, pixelScale } = scaleImages(read, features, featureNames.length);
  const notes = datasetNotes(read, outcomes, target);
  const encoding = read.options.encoding !== undefined
    ? { ...read.options.encoding, classLabels: target.classLabels }
    : newEncoding(read, kept, outcomes, target, featureNames, imageShape, pixelScale);
  return {
    features,
    labels: target.labels,
    count: read.count,
    featureShape,
    featureNames,
    classLabels: target.classLabels,
    source: file,
    ...(pixelScale !== undefined ? { pixelScale } : {}),
    encoding,
    task: target.task,
    ...(target.taskReason !== undefined ? { taskReason: target.taskReason } : {}),
    ...(target.targets !== undefined ? { targets: target.targets } : {}),
    ...(target.targetNames !== undefined ? { targetNames: target.targetNames } : {}),
    notes,
    ...(read.options.report ? { report: buildReport(read, outcomes, target) } : {}),
  };
}

/**
 * The left-out rules never leave a file without features: when every column would go, the numeric ones left
 * out as ID-like or constant (a tiny file, a row-number column) stay, with a note.
 */
function keepSomething(read: CsvRead, outcomes: ColumnOutcome[]): void {
  if (outcomes.some((outcome) => outcome.writer !== undefined && !outcome.ignored)) return;
  read.layout.columns.forEach((column, i) => {
    const outcome = outcomes[i];
    if (column.kind !== 'scanned' || column.ignored || outcome.profile.texts.length > 0) return;
    if (outcome.decision.type !== 'id' && outcome.decision.type !== 'constant') return;
    const kept = numericOutcome(read, column, outcome.profile, { type: outcome.decision.type, use: 'numeric' });
    kept.notes.unshift(`kept although ${outcome.decision.note ?? outcome.decision.type}: every other column is left out`);
    outcomes[i] = kept;
  });
}

function leftOut(outcomes: readonly ColumnOutcome[]): { name: string; type: ColumnType; note: string }[] {
  return outcomes.filter((outcome) => outcome.writer === undefined)
    .map((outcome) => ({ name: outcome.name, type: outcome.decision.type, note: outcome.decision.note ?? 'left out' }));
}

function datasetNotes(read: CsvRead, outcomes: readonly ColumnOutcome[], target: TargetOutcome): string[] {
  const notes = groupedNotes(leftOut(outcomes.filter((outcome) => !outcome.ignored)));
  for (const outcome of outcomes) {
    if (outcome.writer === undefined) continue;
    for (const note of outcome.notes) notes.push(`column ${quoteCell(outcome.name, 60)}: ${note}`);
  }
  if (read.dropped.count > 0) {
    const what = read.layout.targets.length > 1 ? 'a target' : 'the label';
    notes.push(`${formatCount(read.dropped.count)} row${read.dropped.count === 1 ? '' : 's'} left out because ${what} is missing (row${read.dropped.count === 1 ? '' : 's'} ${read.dropped.lines.join(', ')}${read.dropped.count > read.dropped.lines.length ? ', …' : ''})`);
  }
  notes.push(...target.notes);
  const { separatorLine, comments, decimal } = read.shape;
  if (separatorLine !== undefined) notes.push(`the first line (sep=${separatorLine === '\t' ? '<tab>' : separatorLine}) names the delimiter, as Excel writes it, and is skipped`);
  if (comments.lines > 0) notes.push(commentNote(comments.lines, comments.names !== undefined));
  if (read.trailingDelimiter) notes.push('every line ends with a delimiter: the empty field after it is not a column');
  if (decimal === ',') notes.push('numbers are written with a decimal comma (162,5 is read as 162.5; 1.234,5 as 1234.5)');
  return notes;
}

/** What the '#' lines at the top were taken for. */
function commentNote(lines: number, named: boolean): string {
  const numpy = 'names the columns (as numpy\'s savetxt writes them)';
  if (lines === 1) return named ? `the first line, after its #, ${numpy}` : 'the first line starts with # and is a note, skipped';
  return `the first ${lines} lines start with # and are notes, skipped${named ? `; the last one ${numpy}` : ''}`;
}

function newEncoding(
  read: CsvRead, kept: readonly ColumnOutcome[], outcomes: readonly ColumnOutcome[], target: TargetOutcome,
  featureNames: string[], imageShape: readonly number[] | undefined, pixelScale: number | undefined,
): CsvEncoding {
  const { layout } = read;
  const regression = target.task === 'regression';
  const targets = layout.targets.map((column) => ({ name: layout.names[column.source], index: column.source }));
  const dropped = outcomes.filter((outcome) => outcome.writer === undefined && !outcome.ignored);
  return {
    hasHeader: read.hasHeader,
    delimiter: read.shape.delimiter,
    columnCount: layout.columnCount,
    label: regression || targets.length === 0 ? null : targets[0],
    columns: kept.map((outcome) => outcome.encoded!),
    featureNames,
    classLabels: target.classLabels,
    ...(imageShape !== undefined ? { imageShape: [imageShape[0], imageShape[1], imageShape[2]] as [number, number, number] } : {}),
    ...(pixelScale !== undefined ? { pixelScale } : {}),
    missingMarkers: [...read.markers],
    task: target.task,
    ...(regression && targets.length > 0 ? { targets } : {}),
    ...(dropped.length > 0 ? { leftOut: dropped.map((outcome) => ({ name: outcome.name, index: outcome.source, reason: outcome.decision.note ?? outcome.decision.type })) } : {}),
  };
}

function buildReport(read: CsvRead, outcomes: readonly ColumnOutcome[], target: TargetOutcome): ColumnReport[] {
  const reports: ColumnReport[] = [];
  for (const outcome of outcomes) {
    const ignored = outcome.ignored === true;
    const notes = ignored ? ['left out as asked (ignore)'] : outcome.notes;
    reports.push(reportColumn(outcome.profile, outcome.decision, outcome.writer === undefined || ignored ? 'left out' : 'feature', ignored ? 0 : outcome.featureNames.length, notes));
  }
  for (const column of read.layout.targets) {
    const profile = textProfile(column.column, column.name, column.source, read.count);
    const decision: ColumnDecision = target.task === 'regression' ? { type: 'numeric', use: 'numeric' } : inferLabelType(profile);
    const notes = target.taskReason !== undefined ? [target.taskReason] : [];
    reports.push(reportColumn(profile, decision, target.task === 'regression' ? 'target' : 'label', 0, notes));
  }
  return reports.sort((a, b) => a.index - b.index);
}

function inferLabelType(profile: ColumnProfile): ColumnDecision {
  const decision = inferColumn(profile);
  return decision.type === 'boolean' ? decision : { type: 'categorical', use: 'categorical' };
}
