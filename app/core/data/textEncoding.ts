// What a "CSV" file's first bytes say it is: UTF-8 text (the default), UTF-16 little-endian text with its
// byte order mark (Excel's "Unicode Text" export), or something that is not text at all: a workbook saved
// as .xlsx/.ods (a ZIP) or .xls, or another binary file. Those get a message that says what to do instead
// of a parse error on their first row.
import { DataError } from './errors';

export type TextEncoding = 'utf8' | 'utf16le';

const startsWith = (head: Uint8Array, bytes: readonly number[]) => bytes.every((byte, index) => head[index] === byte);

/** The encoding to read the file with, or a DataError naming the file and what it looks like. */
export function textEncodingOf(file: string, head: Uint8Array): TextEncoding {
  if (startsWith(head, [0xff, 0xfe])) return 'utf16le';
  if (startsWith(head, [0xfe, 0xff])) {
    throw new DataError(file, 'the file is UTF-16 big-endian text, which is not read: save it as UTF-8 (in Excel: Save As, "CSV UTF-8")');
  }
  if (startsWith(head, [0x50, 0x4b, 0x03, 0x04])) {
    throw new DataError(file, 'the file is a ZIP archive, such as an Excel (.xlsx) or LibreOffice (.ods) workbook, not a CSV: save the sheet as CSV (in Excel: Save As, "CSV UTF-8")');
  }
  if (startsWith(head, [0xd0, 0xcf, 0x11, 0xe0])) {
    throw new DataError(file, 'the file is an old Excel workbook (.xls), not a CSV: save the sheet as CSV (in Excel: Save As, "CSV UTF-8")');
  }
  if (head.includes(0)) throw new DataError(file, 'the file is not text (it holds zero bytes): is it a CSV file?');
  return 'utf8';
}
