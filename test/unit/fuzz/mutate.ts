// Mutations of valid inputs: bytes (flips, edge values, truncation, extension, splicing), text (quotes,
// delimiters, line ends, BOMs, encodings, ragged rows, very long fields, odd numbers), JSON (a node replaced
// by an edge value, removed or duplicated) and gzip (corrupt, truncated, bombs). Each appends a short
// description to `log`, so a failing case says what was done to its seed.
import * as zlib from 'node:zlib';
import type { Random } from './random';

export type Log = string[];

// ---- bytes ----

/** Values that break naive arithmetic on header fields: zero, sign bits, maxima, off-by-ones. */
export const edgeUint32 = [0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff];
const edgeBytes = [0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff, 0x22, 0x2c, 0x0a, 0x0d, 0x1f, 0x8b];

function randomBytes(random: Random, length: number): Uint8Array {
  return Uint8Array.from({ length }, () => random.int(256));
}

function concat(...parts: Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(parts));
}

/** One random byte-level mutation. `others` are further valid inputs to splice from. */
export function mutateBytes(random: Random, bytes: Uint8Array, log: Log, others: readonly Uint8Array[] = []): Uint8Array {
  const length = bytes.length;
  const at = () => random.int(Math.max(length, 1));
  switch (random.int(10)) {
    case 0: {
      if (length === 0) return bytes;
      const copy = bytes.slice();
      const index = at();
      const bit = random.int(8);
      copy[index] ^= 1 << bit;
      log.push(`flip bit ${bit} of byte ${index}`);
      return copy;
    }
    case 1: {
      if (length === 0) return bytes;
      const copy = bytes.slice();
      const index = at();
      copy[index] = random.pick(edgeBytes);
      log.push(`byte ${index} = 0x${copy[index].toString(16)}`);
      return copy;
    }
    case 2: {
      const cut = at();
      log.push(`truncate to ${cut} bytes`);
      return bytes.slice(0, cut);
    }
    case 3: {
      const extra = random.chance(0.5) ? randomBytes(random, random.range(1, 64)) : new Uint8Array(random.range(1, 4096));
      log.push(`append ${extra.length} bytes`);
      return concat(bytes, extra);
    }
    case 4: {
      const index = at();
      const inserted = randomBytes(random, random.range(1, 16));
      log.push(`insert ${inserted.length} bytes at ${index}`);
      return concat(bytes.subarray(0, index), inserted, bytes.subarray(index));
    }
    case 5: {
      const begin = at();
      const end = Math.min(length, begin + random.range(1, 32));
      log.push(`delete bytes ${begin}..${end}`);
      return concat(bytes.subarray(0, begin), bytes.subarray(end));
    }
    case 6: {
      const begin = at();
      const end = Math.min(length, begin + random.range(1, 64));
      const times = random.range(1, 8);
      log.push(`repeat bytes ${begin}..${end} ${times} times`);
      return concat(bytes.subarray(0, end), ...Array.from({ length: times }, () => bytes.subarray(begin, end)), bytes.subarray(end));
    }
    case 7: {
      if (length < 4) return bytes;
      const copy = Buffer.from(bytes);
      const index = random.int(length - 3);
      const value = random.pick(edgeUint32);
      if (random.chance(0.5)) copy.writeUInt32BE(value, index);
      else copy.writeUInt32LE(value, index);
      log.push(`uint32 at ${index} = 0x${value.toString(16)}`);
      return new Uint8Array(copy);
    }
    case 8: {
      if (others.length === 0) return bytes;
      const other = random.pick(others);
      const cut = at();
      const from = random.int(Math.max(other.length, 1));
      log.push(`splice: first ${cut} bytes, then another seed from byte ${from}`);
      return concat(bytes.subarray(0, cut), other.subarray(from));
    }
    default: {
      const begin = at();
      const end = Math.min(length, begin + random.range(1, 16));
      const copy = bytes.slice();
      copy.fill(random.pick([0, 0xff, 0x20]), begin, end);
      log.push(`fill bytes ${begin}..${end}`);
      return copy;
    }
  }
}

// ---- text ----

/** Cells and fragments that trip up number parsing, quoting and line splitting. */
export const oddFragments = [
  '"', '""', '"a,b"', '"\n"', ',', ';', '\t', '|', '\n', '\r', '\r\n', '\n\n\n', '\uFEFF', '\u0000', '\uD800', '\u00e9', '\u0661\u0662',
  'NaN', 'nan', 'Infinity', '-Infinity', 'inf', '1e39', '-1e39', '3.5e38', '1e-50', '5e-324', '1e308', '1e309', '-0', '+1', '0x10',
  '1_000', '1,5', '1.2.3', '.', '-', '+', 'e5', '1e', ' ', '', '   7   ', '9007199254740993', '-2147483649', '4294967296',
];

/** A text of `length` characters: a long field or token. */
export function longText(random: Random, length: number): string {
  return random.chance(0.5) ? 'x'.repeat(length) : '1'.repeat(length);
}

/** One random character-level mutation of a text (any format). */
export function mutateText(random: Random, text: string, log: Log): string {
  const at = random.int(text.length + 1);
  switch (random.int(6)) {
    case 0: {
      const fragment = random.pick(oddFragments);
      log.push(`insert ${JSON.stringify(fragment)} at char ${at}`);
      return text.slice(0, at) + fragment + text.slice(at);
    }
    case 1: {
      const end = Math.min(text.length, at + random.range(1, 20));
      log.push(`delete chars ${at}..${end}`);
      return text.slice(0, at) + text.slice(end);
    }
    case 2: {
      const fragment = random.pick(oddFragments);
      const end = Math.min(text.length, at + random.range(1, 8));
      log.push(`replace chars ${at}..${end} with ${JSON.stringify(fragment)}`);
      return text.slice(0, at) + fragment + text.slice(end);
    }
    case 3: {
      const length = random.pick([1000, 70_000, 200_000]);
      log.push(`insert a ${length}-character run at char ${at}`);
      return text.slice(0, at) + longText(random, length) + text.slice(at);
    }
    case 4: {
      const ending = random.pick(['\n', '\r\n', '\r', '\n\r', '\u2028']);
      log.push(`line ends ${JSON.stringify(ending)}`);
      return text.replace(/\r\n|\r|\n/g, ending);
    }
    default: {
      log.push(`truncate to ${at} chars`);
      return text.slice(0, at);
    }
  }
}

/** Text as bytes in an encoding other than UTF-8 sometimes (UTF-16 with BOM, Latin-1), or with a BOM. */
export function encodeText(random: Random, text: string, log: Log): Uint8Array {
  switch (random.int(8)) {
    case 0:
      log.push('UTF-16LE with BOM');
      return new Uint8Array(Buffer.from(`\uFEFF${text}`, 'utf16le'));
    case 1:
      log.push('Latin-1');
      return new Uint8Array(Buffer.from(text, 'latin1'));
    case 2:
      log.push('UTF-8 BOM');
      return new Uint8Array(Buffer.from(`\uFEFF${text}`, 'utf8'));
    default:
      return new Uint8Array(Buffer.from(text, 'utf8'));
  }
}

// ---- CSV rows ----

const missingMarkerCells = ['', 'NA', 'N/A', 'nan', 'NULL', '?', '-', ' na ', 'n/a'];
const dateCells = ['2024-01-31', '2024/02/29', '2023-02-29', '2024-13-01', '1999-12-31T23:59:59Z', '2020-06-01 08:30', '01/02/2020', '2024-1-5', 'NA'];

/** One row/field-level mutation of CSV text (rows split on line ends, fields on `delimiter`). */
export function mutateCsvRows(random: Random, text: string, delimiter: string, log: Log): string {
  const lines = text.split(/\r?\n/);
  const row = random.int(lines.length);
  const fields = lines[row].split(delimiter);
  const field = random.int(fields.length);
  switch (random.int(14)) {
    case 11: {
      const marker = random.pick(missingMarkerCells);
      fields[field] = marker;
      log.push(`row ${row + 1}, field ${field + 1} = missing marker ${JSON.stringify(marker)}`);
      break;
    }
    case 12:
    case 13: {
      // A whole column rewritten: dates (some malformed) or row ids, the messy columns users bring.
      const dates = random.chance(0.5);
      for (let i = 1; i < lines.length; i++) {
        const cells = lines[i].split(delimiter);
        if (field >= cells.length) continue;
        cells[field] = dates ? random.pick(dateCells) : String(random.chance(0.9) ? i : random.int(5));
        lines[i] = cells.join(delimiter);
      }
      log.push(`column ${field + 1} becomes ${dates ? 'dates' : 'row ids'}`);
      return lines.join('\n');
    }
    case 0:
      fields.splice(field, 1);
      log.push(`row ${row + 1}: drop field ${field + 1}`);
      break;
    case 1:
      fields.splice(field, 0, random.pick(oddFragments));
      log.push(`row ${row + 1}: add a field at ${field + 1}`);
      break;
    case 2: {
      const cell = random.pick(oddFragments);
      fields[field] = cell;
      log.push(`row ${row + 1}, field ${field + 1} = ${JSON.stringify(cell)}`);
      break;
    }
    case 3:
      fields[field] = `"${fields[field]}`;
      log.push(`row ${row + 1}, field ${field + 1}: unclosed quote`);
      break;
    case 4:
      fields[field] = `"${fields[field].replace(/"/g, '""')}${random.pick(['\n', delimiter, '""', '\r\n'])}x"`;
      log.push(`row ${row + 1}, field ${field + 1}: quoted, with a line break / delimiter / quote inside`);
      break;
    case 5: {
      const length = random.pick([1000, 70_000, 300_000]);
      fields[field] = longText(random, length);
      log.push(`row ${row + 1}, field ${field + 1}: ${length} characters`);
      break;
    }
    case 6: {
      const other = random.pick([',', ';', '\t', '|', ' ']);
      lines[row] = fields.join(other);
      log.push(`row ${row + 1}: delimiter ${JSON.stringify(other)}`);
      return lines.join('\n');
    }
    case 7: {
      const copies = random.range(1, 50);
      lines.splice(row, 0, ...Array.from({ length: copies }, () => lines[row]));
      log.push(`row ${row + 1} repeated ${copies} times`);
      return lines.join('\n');
    }
    case 8:
      lines.splice(row, 1);
      log.push(`delete row ${row + 1}`);
      return lines.join('\n');
    case 9: {
      const width = random.pick([100, 3000]);
      for (let i = 0; i < lines.length; i++) lines[i] += delimiter.repeat(width) ;
      log.push(`every row gets ${width} empty fields`);
      return lines.join('\n');
    }
    default: {
      const other = random.pick([',', ';', '\t', '|']);
      log.push(`every delimiter becomes ${JSON.stringify(other)}`);
      return text.split(delimiter).join(other);
    }
  }
  lines[row] = fields.join(delimiter);
  return lines.join('\n');
}

// ---- JSON ----

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Path = (string | number)[];

/** Values that break validation: wrong types, signs, integer limits, huge and tiny, empty and long. */
export function edgeJsonValue(random: Random): Json {
  const values: (() => Json)[] = [
    () => null, () => true, () => false, () => 0, () => -1, () => 1, () => 1.5, () => -0.5, () => 2 ** 31 - 1, () => 2 ** 31,
    () => 2 ** 32, () => 2 ** 53 + 2, () => 1e308, () => -1e308, () => 5e-324, () => '', () => 'x', () => '1', () => '0.1',
    () => [], () => ({}), () => [[[[]]]], () => 'y'.repeat(100_000), () => Array.from({ length: 10_000 }, (_, i) => i),
    () => ({ kind: 'dense', units: 2 ** 31 - 1 }), () => [2 ** 31 - 1, 2 ** 31 - 1, 2 ** 31 - 1], () => '__proto__',
  ];
  return random.pick(values)();
}

function paths(value: Json, at: Path = [], out: Path[] = []): Path[] {
  out.push(at);
  if (Array.isArray(value)) value.forEach((item, i) => paths(item, [...at, i], out));
  else if (value !== null && typeof value === 'object') for (const key of Object.keys(value)) paths(value[key], [...at, key], out);
  return out;
}

function getAt(value: Json, path: Path): Json {
  let node = value;
  for (const key of path) node = (node as Record<string | number, Json>)[key];
  return node;
}

/** One mutation of a JSON value (a copy): a node replaced, nudged, removed, duplicated, or a key added. */
export function mutateJson(random: Random, value: Json, log: Log, label = 'json'): Json {
  const copy = structuredClone(value);
  const candidates = paths(copy);
  const path = random.pick(candidates);
  const where = `${label}${path.map((key) => (typeof key === 'number' ? `[${key}]` : `.${key}`)).join('')}`;
  if (path.length === 0) {
    const replacement = edgeJsonValue(random);
    log.push(`${where} = ${JSON.stringify(replacement)?.slice(0, 40)}`);
    return replacement;
  }
  const parent = getAt(copy, path.slice(0, -1)) as Record<string | number, Json>;
  const key = path[path.length - 1];
  const current = parent[key];
  const action = random.int(5);
  const isObject = current !== null && typeof current === 'object' && !Array.isArray(current);
  if (action === 0) {
    if (Array.isArray(parent)) parent.splice(key as number, 1);
    else delete parent[key];
    log.push(`remove ${where}`);
  } else if (action === 1 && typeof current === 'number') {
    const nudged = random.pick([current + 1, current - 1, current * 2, -current, current * 1e6, current / 3, 0]);
    parent[key] = nudged;
    log.push(`${where} = ${nudged}`);
  } else if (action === 2 && Array.isArray(current) && current.length > 0) {
    const times = random.range(1, 5);
    const item = current[random.int(current.length)];
    for (let i = 0; i < times; i++) current.push(structuredClone(item));
    log.push(`${where}: ${times} extra copies of an element`);
  } else if (action === 3 && isObject) {
    const name = random.pick(['extra', '__proto__', 'constructor', 'layers.9.weight', '']);
    (current as Record<string, Json>)[name] = edgeJsonValue(random);
    log.push(`${where}.${name} added`);
  } else {
    const replacement = edgeJsonValue(random);
    parent[key] = replacement;
    log.push(`${where} = ${JSON.stringify(replacement)?.slice(0, 40)}`);
  }
  return copy;
}

/** Mutates a JSON text: parsed and mutated (mostly), or corrupted as text. */
export function mutateJsonText(random: Random, text: string, log: Log, label = 'json'): string {
  let parsed: Json | undefined;
  try {
    parsed = JSON.parse(text) as Json;
  } catch {
    parsed = undefined; // corrupted by an earlier round: mutate it as text
  }
  if (parsed !== undefined && random.chance(0.75)) {
    let value = parsed;
    const rounds = random.range(1, 3);
    for (let i = 0; i < rounds; i++) value = mutateJson(random, value, log, label);
    return JSON.stringify(value) ?? 'undefined';
  }
  log.push(`${label} as text:`);
  return mutateText(random, text, log);
}

// ---- gzip ----

/** gzip of `bytes`, then maybe corrupted: a flipped byte, truncated, trailing garbage, two members. */
export function gzipMaybeCorrupt(random: Random, bytes: Uint8Array, log: Log): Uint8Array {
  const packed = new Uint8Array(zlib.gzipSync(bytes));
  switch (random.int(6)) {
    case 0: {
      const copy = packed.slice();
      const index = random.int(copy.length);
      copy[index] ^= 1 << random.int(8);
      log.push(`gzip, then flip a bit of byte ${index}`);
      return copy;
    }
    case 1: {
      const cut = random.int(packed.length);
      log.push(`gzip, truncated to ${cut} bytes`);
      return packed.slice(0, cut);
    }
    case 2:
      log.push('gzip, then trailing garbage');
      return concat(packed, Uint8Array.from({ length: 16 }, () => random.int(256)));
    case 3:
      log.push('gzip, twice concatenated');
      return concat(packed, packed);
    case 4: {
      const copy = packed.slice();
      copy.fill(0, copy.length - 8); // CRC and size
      log.push('gzip with a zeroed trailer (CRC, size)');
      return copy;
    }
    default:
      log.push('gzip');
      return packed;
  }
}
