// Habits of the programs that write CSV files, read by the loader and the Data screen's preview alike
// (nothing of Node here): Excel's `sep=;` first line, which names the delimiter; '#' notes above the rows
// (numpy's savetxt writes the column names there); and a delimiter at the end of every line (`1,2,3,`), which
// would otherwise read as an empty last column and become the default label.

/** A row papaparse makes of an empty or blank line. */
export function isBlankRow(row: readonly string[]): boolean {
  return row.length === 1 && row[0].trim() === '';
}

/** The delimiter an Excel `sep=X` first line names, or undefined (the line is then not data). */
export function excelSeparator(text: string): string | undefined {
  return /^sep=(.)[ \t]*\r?(?:\n|$)/i.exec(text)?.[1];
}

/** The text after an Excel `sep=X` first line (the whole text when there is none). */
export function withoutExcelSeparator(text: string): string {
  if (excelSeparator(text) === undefined) return text;
  const end = text.indexOf('\n');
  return end < 0 ? '' : text.slice(end + 1);
}

/** Every row (header included) of at least two fields ends with an empty one: the lines end with a delimiter. */
export function endsWithDelimiter(rows: readonly (readonly string[])[]): boolean {
  const filled = rows.filter((row) => !isBlankRow(row));
  return filled.length > 0 && filled.every((row) => row.length >= 2 && row[row.length - 1].trim() === '');
}

/** The row without the empty field after its last delimiter (in place); a row with a value there is kept whole. */
export function dropTrailingField(fields: string[]): string[] {
  if (fields.length >= 2 && fields[fields.length - 1].trim() === '') fields.length -= 1;
  return fields;
}

/**
 * The lines at the top of the text that start with '#' (notes a logger or numpy's savetxt writes): how many,
 * and the last one without its '#'. numpy writes the column names there (`# x,y,label`).
 */
export function leadingComments(text: string): { count: number; last?: string } {
  let count = 0;
  let last: string | undefined;
  let at = 0;
  while (at < text.length && text[at] === '#') {
    const end = text.indexOf('\n', at);
    const line = (end < 0 ? text.slice(at) : text.slice(at, end)).replace(/\r$/, '');
    last = line.slice(1).trim();
    count++;
    // nothing but '#' lines: they are the rows (a headerless first column of #ff0000 colours), not notes
    if (end < 0 || end + 1 >= text.length) return { count: 0 };
    at = end + 1;
  }
  return count === 0 ? { count } : { count, last };
}

/** The text without its leading '#' lines. */
export function withoutLeadingComments(text: string, count: number): string {
  let at = 0;
  for (let line = 0; line < count; line++) {
    const end = text.indexOf('\n', at);
    if (end < 0) return '';
    at = end + 1;
  }
  return text.slice(at);
}

/**
 * The last leading '#' line's fields (split with the file's delimiter) when they are numpy's header: as many
 * as the first row below, which is data (it holds a number). A note above a header row of its own is not one.
 */
export function commentHeader(lastFields: readonly string[] | undefined, firstRow: readonly string[] | undefined, isNumber: (text: string) => boolean): string[] | undefined {
  if (lastFields === undefined || firstRow === undefined || firstRow.length < 2 || lastFields.length !== firstRow.length) return undefined;
  return firstRow.some(isNumber) ? lastFields.map((field) => field.trim()) : undefined;
}
