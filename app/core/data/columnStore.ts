// Where a CSV's cells go while the file streams by (issue 13): one pass, no second read.
//
// Scanned columns (every feature column whose type is not fixed as text) parse each cell as a number into
// one row-major Float32 buffer, NaN where the cell is missing or not a number; the few non-numeric cells are
// kept apart per column (text id + row), allocated only when a column has one. Text columns (labels, targets,
// columns known to be categorical or dates) keep a text id per row. A 60 000 x 785 pixel CSV thus costs its
// Float32 buffer plus a few numbers per column, as before.

// ---- growable typed buffers ----

export class FloatBuffer {
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

export class IntBuffer {
  data: Int32Array;
  length = 0;
  /** Small by default: a wide file has one per column, most of which stay small or empty. */
  constructor(capacity = 4) {
    this.data = new Int32Array(capacity);
  }
  push(value: number): void {
    if (this.length === this.data.length) {
      const grown = new Int32Array(Math.max(4, this.data.length * 2));
      grown.set(this.data);
      this.data = grown;
    }
    this.data[this.length++] = value;
  }
  trimmed(): Int32Array {
    return this.data.slice(0, this.length);
  }
}

/** Distinct texts in first-seen order, each with an id and a count. */
export class TextIds {
  readonly ids = new Map<string, number>();
  readonly texts: string[] = [];
  readonly counts = new IntBuffer();
  id(text: string): number {
    let id = this.ids.get(text);
    if (id === undefined) {
      id = this.texts.length;
      this.ids.set(text, id);
      this.texts.push(text);
      this.counts.push(0);
    }
    this.counts.data[id]++;
    return id;
  }
}

// ---- scanned (number-first) columns ----

/** The non-numeric, non-missing cells of one scanned column. */
export interface ColumnTexts {
  ids: TextIds;
  /** Data-row index of each such cell, in file order. */
  rows: IntBuffer;
  /** Its text id, parallel to rows. */
  cells: IntBuffer;
}

export class ScannedColumns {
  readonly numbers = new FloatBuffer(); // (rows, width)
  readonly min: Float64Array;
  readonly max: Float64Array;
  readonly sum: Float64Array;
  readonly missing: Int32Array;
  /** 1 once a column holds a number with a fraction. */
  readonly fractional: Uint8Array;
  readonly texts: (ColumnTexts | undefined)[];

  constructor(readonly width: number) {
    this.min = new Float64Array(width).fill(Infinity);
    this.max = new Float64Array(width).fill(-Infinity);
    this.sum = new Float64Array(width);
    this.missing = new Int32Array(width);
    this.fractional = new Uint8Array(width);
    this.texts = new Array<ColumnTexts | undefined>(width).fill(undefined);
  }

  addText(column: number, text: string, row: number): void {
    let texts = this.texts[column];
    if (texts === undefined) {
      texts = { ids: new TextIds(), rows: new IntBuffer(), cells: new IntBuffer() };
      this.texts[column] = texts;
    }
    texts.rows.push(row);
    texts.cells.push(texts.ids.id(text.trim()));
  }

  textCells(column: number): number {
    return this.texts[column]?.rows.length ?? 0;
  }

  /** One column's values (NaN where missing or text), copied out of the row-major buffer. */
  column(column: number, rows: number): Float32Array {
    const values = new Float32Array(rows);
    const data = this.numbers.data;
    for (let row = 0, at = column; row < rows; row++, at += this.width) values[row] = data[at];
    return values;
  }
}

/** A text column: one text id per row, -1 where the cell is missing. */
export class TextColumn {
  readonly ids = new TextIds();
  readonly rows = new IntBuffer();
  missing = 0;
  add(text: string, isMissing: boolean): void {
    if (isMissing) {
      this.rows.push(-1);
      this.missing++;
    } else {
      this.rows.push(this.ids.id(text));
    }
  }
}

/**
 * A scanned column as a text column: its number cells written canonically (the shortest text that reads
 * back to the same 32-bit float: "1.50" becomes "1.5"), its text cells as they were, -1 where missing.
 */
export function scannedAsText(scan: ScannedColumns, column: number, rows: number): { texts: string[]; counts: number[]; rowIds: Int32Array } {
  const rowIds = new Int32Array(rows).fill(-1);
  const ids = new TextIds();
  const byNumber = new Map<number, number>();
  const data = scan.numbers.data;
  for (let row = 0, at = column; row < rows; row++, at += scan.width) {
    const value = data[at];
    if (value !== value) continue; // NaN: missing or text, set below
    let id = byNumber.get(value);
    if (id === undefined) {
      id = ids.id(canonicalNumber(value));
      byNumber.set(value, id);
    } else {
      ids.counts.data[id]++;
    }
    rowIds[row] = id;
  }
  const texts = scan.texts[column];
  if (texts !== undefined) {
    for (let i = 0; i < texts.rows.length; i++) rowIds[texts.rows.data[i]] = ids.id(texts.ids.texts[texts.cells.data[i]]);
  }
  return { texts: ids.texts, counts: Array.from(ids.counts.data.subarray(0, ids.texts.length)), rowIds };
}

/** The shortest decimal text that reads back to this 32-bit float. */
export function canonicalNumber(value: number): string {
  for (let digits = 1; digits < 9; digits++) {
    const text = Number(value.toPrecision(digits));
    if (Math.fround(text) === value) return String(text);
  }
  return String(value);
}
