// Strict decimal numbers for CSV cells.

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

export function isNumberText(text: string): boolean {
  return !Number.isNaN(parseStrictNumber(text));
}

export const maxFloat32 = 3.4028234663852886e38;

/** Sorts distinct texts: numerically when all are numbers ("1" and "1.0" become one), else by code point. */
export function orderValues(texts: readonly string[]): { ordered: string[]; rank: Int32Array } {
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

/**
 * Looks a text up among known values: exactly, then by numeric value when both are numbers, then by the
 * value as a 32-bit float (categories made from float cells are written in their shortest form).
 */
export function makeLookup(values: readonly string[]): (text: string) => number {
  const exact = new Map<string, number>();
  const numeric = new Map<number, number>();
  const single = new Map<number, number>();
  values.forEach((value, index) => {
    if (!exact.has(value)) exact.set(value, index);
    const number = parseStrictNumber(value);
    if (Number.isNaN(number)) return;
    if (!numeric.has(number)) numeric.set(number, index);
    if (!single.has(Math.fround(number))) single.set(Math.fround(number), index);
  });
  return (text) => {
    const found = exact.get(text);
    if (found !== undefined) return found;
    const number = parseStrictNumber(text);
    if (Number.isNaN(number)) return -1;
    return numeric.get(number) ?? single.get(Math.fround(number)) ?? -1;
  };
}
