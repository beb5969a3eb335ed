// Column types and the column report (issue 13): what each CSV column looks like and what the loader does
// with it. Pure functions over a ColumnProfile (counts gathered in the one streaming pass, columnStore.ts).
//
// Inference rules (docs/DATA.md, "Column types"), for a column no option fixes:
// - every cell missing → empty, left out;
// - all numbers: one value and no missing cell → constant, left out; 0/1 only → boolean (one 0/1 feature);
//   distinct integers on every row (20 rows or more) that form a run (a row number) or whose name says id
//   (id, uuid, key, customer_id, userId, …) → ID-like, left out; else numeric;
// - numbers with a few non-numeric cells (under 5 % of the filled cells) → numeric, those cells missing,
//   reported with their rows; 5 % or more → the column is read as text (below);
// - text: 95 % or more of the filled cells dates (dates.ts) → date, else at most 2 values that read as
//   yes/no, true/false, … → boolean, else one value → constant, else every value distinct (20 rows or more):
//   long or multi-word values → free text, else ID-like, both left out; mostly distinct long values → free
//   text, left out; otherwise categorical (one-hot), its 30 most frequent values plus "other" when it has more.
import { parseDate } from './dates';
import { listForMessage, quoteCell } from './errors';

export type ColumnType = 'numeric' | 'categorical' | 'boolean' | 'text' | 'date' | 'id' | 'constant' | 'empty';

/** What the streaming pass knows about one column. */
export interface ColumnProfile {
  name: string;
  /** 0-based field index in the file. */
  index: number;
  /** Data rows read (rows dropped for a missing target not counted). */
  rows: number;
  missing: number;
  /** Cells that are numbers, with their range, sum and whether any has a fraction. */
  numberCells: number;
  min: number;
  max: number;
  sum: number;
  fractional: boolean;
  /** Distinct non-numeric, non-missing cells (trimmed) and how often each occurs. */
  texts: readonly string[];
  textCounts: readonly number[];
  /** Per row: the number, NaN where missing or text (for distinct counts and histograms). */
  values(): Float32Array;
}

/** How the loader uses a column. */
export type ColumnUse = 'numeric' | 'categorical' | 'date' | 'leave out';

export interface ColumnDecision {
  type: ColumnType;
  use: ColumnUse;
  /** Why (for left-out columns and warnings): plain language, without the column name. */
  note?: string;
  /** Numeric columns: the non-numeric cells count as missing. */
  textAsMissing?: boolean;
}

export const maxCategories = 30;
export const numericTextShare = 0.05;
export const dateShare = 0.95;
const minRowsForIdentity = 20;
/** A column named like an ID (`id`, `customer_id`) whose integers are all distinct is one from a few rows on: 16-row
 * tables (linnerud's training folds) otherwise learned from a random ID. */
const minRowsForNamedIdentity = 5;
const longText = 20;

const idNamePattern = /^(id|uuid|guid|key|index|idx|row|rowid|row_id|record|#)$|[_\s.-](id|uuid|guid|key)$|[a-z](Id|ID|Uuid|UUID)$/;
const booleanWords = new Set(['true', 'false', 'yes', 'no', 'y', 'n', 't', 'f', 'on', 'off']);

export function looksLikeIdName(name: string): boolean {
  return idNamePattern.test(name.trim()) || idNamePattern.test(name.trim().toLowerCase());
}

function textCells(profile: ColumnProfile): number {
  let cells = 0;
  for (const count of profile.textCounts) cells += count;
  return cells;
}

/** The type of a column no option fixes, and what the loader does with it (rules above). */
export function inferColumn(profile: ColumnProfile): ColumnDecision {
  const filled = profile.rows - profile.missing;
  if (filled === 0) return { type: 'empty', use: 'leave out', note: 'every cell is missing' };
  const texts = textCells(profile);
  if (texts === 0) return inferNumeric(profile);
  if (profile.numberCells > 0 && texts / filled < numericTextShare) {
    const decision = inferNumeric(profile);
    if (decision.use !== 'numeric') return decision;
    return { ...decision, textAsMissing: true };
  }
  return inferText(profile, filled);
}

function inferNumeric(profile: ColumnProfile): ColumnDecision {
  if (profile.min === profile.max && profile.numberCells === profile.rows) {
    return { type: 'constant', use: 'leave out', note: `every value is ${profile.min}` };
  }
  if (!profile.fractional && profile.min === 0 && profile.max === 1) return { type: 'boolean', use: 'numeric' };
  const named = looksLikeIdName(profile.name);
  if (!profile.fractional && profile.numberCells === profile.rows && profile.rows >= (named ? minRowsForNamedIdentity : minRowsForIdentity) &&
      profile.max - profile.min + 1 >= profile.rows && allDistinct(profile.values())) {
    const run = profile.max - profile.min + 1 === profile.rows;
    if (run || named) {
      return { type: 'id', use: 'leave out', note: `ID-like: all ${formatCount(profile.rows)} values are distinct integers${run ? ` (a run ${profile.min}…${profile.max})` : ''}` };
    }
    return {
      type: 'numeric', use: 'numeric',
      note: `all ${formatCount(profile.rows)} values are distinct integers; if they identify rows, leave the column out`,
    };
  }
  return { type: 'numeric', use: 'numeric' };
}

function inferText(profile: ColumnProfile, filled: number): ColumnDecision {
  const { distinct, dates, meanLength, multiWord, booleans } = textShape(profile);
  if (dates >= dateShare * filled) return { type: 'date', use: 'date' };
  if (distinct <= 2 && booleans === distinct) return { type: 'boolean', use: 'categorical' };
  if (distinct === 1 && profile.missing === 0) return { type: 'constant', use: 'leave out', note: `every value is ${quoteCell(profile.texts[0] ?? String(profile.min))}` };
  const wordy = meanLength >= longText || multiWord > filled / 2;
  if (filled >= minRowsForIdentity && distinct === filled) {
    return wordy
      ? { type: 'text', use: 'leave out', note: `free text: all ${formatCount(filled)} values are distinct` }
      : { type: 'id', use: 'leave out', note: `ID-like: all ${formatCount(filled)} values are distinct` };
  }
  if (filled >= minRowsForIdentity && distinct > filled / 2 && wordy) {
    return { type: 'text', use: 'leave out', note: `free text: ${formatCount(distinct)} distinct values in ${formatCount(filled)} cells` };
  }
  if (distinct === filled && looksLikeIdName(profile.name) && filled > 1) {
    return { type: 'id', use: 'leave out', note: `ID-like: its name and all ${formatCount(filled)} values distinct` };
  }
  return { type: 'categorical', use: 'categorical' };
}

/** Distinct values (texts plus distinct numbers), date cells, mean length and word count, boolean words. */
function textShape(profile: ColumnProfile) {
  let dates = 0;
  let length = 0;
  let multiWord = 0;
  let booleans = 0;
  let cells = 0;
  profile.texts.forEach((text, i) => {
    const count = profile.textCounts[i];
    cells += count;
    if (parseDate(text) !== undefined) dates += count;
    length += text.length * count;
    if (/\s/.test(text)) multiWord += count;
    if (booleanWords.has(text.toLowerCase())) booleans++;
  });
  const numbers = profile.numberCells > 0 ? distinctCount(profile.values()).count : 0;
  if (profile.numberCells > 0 && !profile.fractional && profile.min >= 0 && profile.max <= 1) booleans += numbers;
  return { distinct: profile.texts.length + numbers, dates, meanLength: length / Math.max(1, cells), multiWord, booleans };
}

// ---- counting ----

function allDistinct(values: Float32Array): boolean {
  const sorted = Float32Array.from(values).sort();
  for (let i = 1; i < sorted.length; i++) if (sorted[i] === sorted[i - 1]) return false;
  return true;
}

export const distinctCap = 10_000;

/** Distinct numbers (NaN not counted), counted up to distinctCap: `capped` when there are more. */
export function distinctCount(values: Float32Array): { count: number; capped: boolean } {
  let min = Infinity;
  let max = -Infinity;
  let integers = true;
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value !== value) continue;
    if (value < min) min = value;
    if (value > max) max = value;
    if (integers && Math.floor(value) !== value) integers = false;
  }
  if (min > max) return { count: 0, capped: false };
  if (integers && max - min < 1 << 20) { // small integer range (pixels, counts): a bitmap
    const seen = new Uint8Array(max - min + 1);
    let count = 0;
    for (let i = 0; i < values.length; i++) {
      const value = values[i];
      if (value !== value) continue;
      const at = value - min;
      if (seen[at] === 0) { seen[at] = 1; count++; }
    }
    return { count, capped: false };
  }
  const seen = new Set<number>();
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value !== value) continue;
    seen.add(value);
    if (seen.size > distinctCap) return { count: distinctCap, capped: true };
  }
  return { count: seen.size, capped: false };
}

export function formatCount(count: number): string {
  return count.toLocaleString('en-US');
}

// ---- the report ----

export interface ColumnReport {
  name: string;
  /** 0-based field index in the file. */
  index: number;
  type: ColumnType;
  /** What the loader did with it. */
  role: 'feature' | 'label' | 'target' | 'left out';
  rows: number;
  missing: number;
  missingShare: number;
  /** Distinct non-missing values, counted up to 10 000 (`distinctCapped` then). */
  distinct: number;
  distinctCapped: boolean;
  /** Numbers in the column (text cells and missing cells not counted). */
  min?: number;
  max?: number;
  mean?: number;
  /** Numeric columns: 10 equal-width bins from min to max. */
  histogram?: { min: number; max: number; counts: number[] };
  /** Text-like columns: the most frequent values, most frequent first (up to 8). */
  top?: { value: string; count: number }[];
  /** Features it became (1 for numeric, one per category, one per date part, 0 when left out). */
  features: number;
  notes: string[];
}

const topShown = 8;

/** The report entry of one column, given what the loader decided about it. */
export function reportColumn(
  profile: ColumnProfile,
  decision: ColumnDecision,
  role: ColumnReport['role'],
  features: number,
  notes: readonly string[],
): ColumnReport {
  const values = profile.numberCells > 0 ? profile.values() : undefined;
  const numbers = values !== undefined ? distinctCount(values) : { count: 0, capped: false };
  const distinct = Math.min(numbers.count + profile.texts.length, distinctCap);
  const report: ColumnReport = {
    name: profile.name,
    index: profile.index,
    type: decision.type,
    role,
    rows: profile.rows,
    missing: profile.missing,
    missingShare: profile.rows === 0 ? 0 : profile.missing / profile.rows,
    distinct,
    distinctCapped: numbers.capped || numbers.count + profile.texts.length > distinctCap,
    features,
    notes: [...notes],
  };
  if (profile.numberCells > 0) {
    report.min = profile.min;
    report.max = profile.max;
    report.mean = profile.sum / profile.numberCells;
  }
  const numericLike = decision.use === 'numeric' || (decision.type === 'id' && profile.texts.length === 0) ||
    (decision.type === 'constant' && profile.texts.length === 0);
  if (numericLike && values !== undefined) report.histogram = histogram(values, profile.min, profile.max);
  else report.top = topValues(profile, values);
  return report;
}

export function histogram(values: Float32Array, min: number, max: number, bins = 10): { min: number; max: number; counts: number[] } {
  const counts = new Array<number>(bins).fill(0);
  const span = max - min;
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value !== value) continue;
    const bin = span > 0 ? Math.min(bins - 1, Math.floor(((value - min) / span) * bins)) : 0;
    counts[bin]++;
  }
  return { min, max, counts };
}

function topValues(profile: ColumnProfile, values: Float32Array | undefined): { value: string; count: number }[] {
  const entries = profile.texts.map((value, i) => ({ value, count: profile.textCounts[i] }));
  if (values !== undefined) {
    const numbers = new Map<number, number>();
    for (let i = 0; i < values.length; i++) {
      const value = values[i];
      if (value === value) numbers.set(value, (numbers.get(value) ?? 0) + 1);
      if (numbers.size > distinctCap) break;
    }
    for (const [value, count] of numbers) entries.push({ value: String(value), count });
  }
  entries.sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
  return entries.slice(0, topShown);
}

// ---- notes ----

/** Columns left out for the same reason, as one note: `3 ID-like columns left out: a, b, c`. */
export function groupedNotes(leftOut: readonly { name: string; type: ColumnType; note: string }[]): string[] {
  const byType = new Map<ColumnType, { name: string; note: string }[]>();
  for (const entry of leftOut) {
    const list = byType.get(entry.type) ?? [];
    list.push(entry);
    byType.set(entry.type, list);
  }
  const notes: string[] = [];
  for (const [type, entries] of byType) {
    if (entries.length <= 3) {
      for (const entry of entries) notes.push(`column ${quoteCell(entry.name, 60)} left out (${entry.note})`);
    } else {
      notes.push(`${entries.length} ${typeWords[type]} columns left out: ${listForMessage(entries.map((entry) => entry.name))}`);
    }
  }
  return notes;
}

const typeWords: Record<ColumnType, string> = {
  numeric: 'numeric', categorical: 'categorical', boolean: 'boolean', text: 'free-text', date: 'date', id: 'ID-like',
  constant: 'constant', empty: 'empty',
};
