// What a "CSV" file's first bytes say it is: UTF-8 text (the default), UTF-16 little-endian text with its
// byte order mark (Excel's "Unicode Text" export), or something that is not text at all: a workbook saved
// as .xlsx/.ods (a ZIP) or .xls, or another binary file. Those get a message that says what to do instead
// of a parse error on their first row. Shared with the renderer's preview and Electron's dialog: nothing of
// Node here.

export type TextEncoding = 'utf8' | 'utf16le';

const saveAsCsv = 'save the sheet as CSV (in Excel: Save As, "CSV UTF-8")';

const startsWith = (head: Uint8Array, bytes: readonly number[]) => bytes.every((byte, index) => head[index] === byte);

/** gzip's magic bytes: a compressed file (.csv.gz), which the readers decompress before anything else. */
export function isGzip(head: Uint8Array): boolean {
  return startsWith(head, [0x1f, 0x8b]);
}

/** What a cut or damaged gzip file is told (zlib's or the browser's reason inside). */
export function damagedGzipProblem(reason: string): string {
  return `is not a valid gzip file (${reason}): decompress it, or compress it again`;
}

/** The encoding to read the file with, or what the file is instead (a sentence that says what to do). */
export function textEncodingOf(head: Uint8Array): { encoding: TextEncoding } | { problem: string } {
  if (startsWith(head, [0xff, 0xfe])) return { encoding: 'utf16le' };
  if (startsWith(head, [0xfe, 0xff])) return { problem: 'the file is UTF-16 big-endian text, which is not read: save it as UTF-8 (in Excel: Save As, "CSV UTF-8")' };
  if (startsWith(head, [0x50, 0x4b, 0x03, 0x04])) return { problem: `the file is a ZIP archive, such as an Excel (.xlsx) or LibreOffice (.ods) workbook, not a CSV: ${saveAsCsv}` };
  if (startsWith(head, [0xd0, 0xcf, 0x11, 0xe0])) return { problem: `the file is an old Excel workbook (.xls), not a CSV: ${saveAsCsv}` };
  if (head.includes(0)) return { problem: 'the file is not text (it holds zero bytes): is it a CSV file?' };
  return { encoding: 'utf8' };
}

/** The head's text in its encoding (a cut multi-byte character at the end is dropped), or what the file is instead. */
export function decodeTextHead(head: Uint8Array): { text: string; encoding: TextEncoding } | { problem: string } {
  const found = textEncodingOf(head);
  if ('problem' in found) return found;
  const label = found.encoding === 'utf16le' ? 'utf-16le' : 'utf-8';
  return { text: new TextDecoder(label).decode(head, { stream: true }), encoding: found.encoding };
}

/** A workbook's file name: the Data screen says to save it as CSV rather than "not a CSV file". */
export function workbookProblem(name: string): string | undefined {
  return /\.(xlsx|xlsm|xls|ods)$/i.test(name) ? `${name} is a spreadsheet workbook, not a CSV: ${saveAsCsv}` : undefined;
}
