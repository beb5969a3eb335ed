// How a CSV file is written, from its first rows: Excel's `sep=;` line, the '#' lines above the rows (numpy's
// header among them), the delimiter and the decimal mark. The loader (csv.ts) and the Data screen's preview
// (renderer/src/lib/csvSample.ts) read a head through this one function, each with its own delimiter sniffer.
// Nothing of Node here.
import Papa from 'papaparse';
import { commentHeader, excelSeparator, isBlankRow, leadingComments, withoutExcelSeparator, withoutLeadingComments } from './csvQuirks';
import { cellAsPoint, guessDecimalMark, type DecimalMark } from './decimalMark';
import { isNumberText } from './numbers';

export interface HeadShape {
  /** The head below the sep line and the '#' lines: the rows (a header row among them). */
  body: string;
  delimiter: string;
  decimal: DecimalMark;
  /** Excel's `sep=X` first line, skipped: the delimiter it named. */
  separatorLine?: string;
  /** Lines starting with '#' at the top, skipped; `names`: the last one's, numpy's header. */
  comments: { lines: number; names?: string[] };
}

/** The head's shape; a delimiter or decimal mark the caller gives wins over the file's. */
export function findHeadShape(
  head: string, given: { delimiter?: string; decimal?: DecimalMark }, sniffDelimiter: (text: string) => string, sampleRows: number,
): HeadShape {
  const separatorLine = excelSeparator(head);
  // '#' lines at the top are notes (a logger's, numpy's savetxt header), not rows
  const comments = separatorLine === undefined ? leadingComments(head) : { count: 0 };
  const body = withoutLeadingComments(withoutExcelSeparator(head), comments.count);
  // Excel's `sep=;` line names the delimiter, unless the caller gives one
  const delimiter = given.delimiter ?? separatorLine ?? sniffDelimiter(body);
  const firstRows = Papa.parse<string[]>(body, { delimiter, preview: sampleRows }).data.filter((row) => !isBlankRow(row));
  const decimal = given.decimal ?? guessDecimalMark(firstRows, delimiter);
  const lastFields = comments.last !== undefined ? Papa.parse<string[]>(comments.last, { delimiter }).data[0] : undefined;
  const names = commentHeader(lastFields, firstRows[0], (text) => isNumberText(cellAsPoint(text, decimal)));
  return {
    body, delimiter, decimal,
    ...(separatorLine !== undefined ? { separatorLine } : {}),
    comments: { lines: comments.count, ...(names ? { names } : {}) },
  };
}
