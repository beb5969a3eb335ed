// The decimal mark of a CSV file. Spreadsheets in most of Europe write 162,5 and separate fields with ';'
// (or a tab); read with '.' only, every such column would be text. The mark is a property of the file, so
// each file is sniffed on its own (a model's evaluation file may be written in another locale than its
// training file). Shared with the renderer's preview: nothing of Node here.

export type DecimalMark = '.' | ',';

/** 162,5  -3,25  ,5  1,5e-3: a number written with a decimal comma (no grouping). */
const commaNumber = /^[ \t]*[+-]?\d*,\d+([eE][+-]?\d+)?[ \t]*$/;
/** 1.234.567 or 1.234,5: thousands grouped with points, in a decimal-comma file. */
const groupedNumber = /^[ \t]*[+-]?[1-9]\d{0,2}(\.\d{3})+(,\d+)?[ \t]*$/;
/** "1,234" or "1,234.5": thousands grouped with commas in a decimal-point file (quoted, where ',' delimits). */
const commaGroupedNumber = /^[ \t]*[+-]?[1-9]\d{0,2}(,\d{3})+(\.\d+)?[ \t]*$/;
/** 1.5  .25  2.: a number written with a decimal point. */
const pointNumber = /^[ \t]*[+-]?(\d+\.\d*|\.\d+)([eE][+-]?\d+)?[ \t]*$/;

/**
 * ',' when the delimiter is not a comma, some cells are numbers with a decimal comma that cannot be thousands
 * grouping (162,5 or 0,125; 1,234 could be either and decides nothing), and no cell is a number with a decimal
 * point other than thousands grouping (1.234); else '.'.
 */
export function guessDecimalMark(rows: readonly (readonly string[])[], delimiter: string): DecimalMark {
  if (delimiter === ',') return '.';
  let commaCells = 0;
  for (const row of rows) {
    for (const cell of row) {
      if (commaNumber.test(cell)) {
        if (!commaGroupedNumber.test(cell)) commaCells++;
      } else if (pointNumber.test(cell) && !groupedNumber.test(cell)) {
        return '.';
      }
    }
  }
  return commaCells > 0 ? ',' : '.';
}

/** A decimal-comma file's cell as the number parser reads it (162,5 → 162.5, 1.234,5 → 1234.5); other text unchanged. */
export function commaCellToPoint(cell: string): string {
  if (commaNumber.test(cell)) return cell.replace(',', '.');
  if (groupedNumber.test(cell)) return cell.replace(/\./g, '').replace(',', '.');
  return cell;
}

/** A decimal-point file's cell as the number parser reads it (1,234.5 → 1234.5); other text unchanged. */
export function pointCellWithoutGrouping(cell: string): string {
  // the cheap test first: a pixel CSV's millions of short cells never reach the pattern
  if (cell.length < 5 || cell.indexOf(',') < 0 || !commaGroupedNumber.test(cell)) return cell;
  return cell.replace(/,/g, '');
}

/** A cell as the number parser reads it in a file of this mark: the decimal mark a point, no thousands grouping. */
export function cellAsPoint(cell: string, mark: DecimalMark): string {
  return mark === ',' ? commaCellToPoint(cell) : pointCellWithoutGrouping(cell);
}

/** The row's cells as the number parser reads them (cellAsPoint), in place. */
export function applyDecimalMark(fields: string[], mark: DecimalMark): string[] {
  for (let i = 0; i < fields.length; i++) fields[i] = cellAsPoint(fields[i], mark);
  return fields;
}
