// IDX files (MNIST, Fashion-MNIST, EMNIST; DESIGN §4): an images file and a labels file, raw or gzip.
// Format: 2 zero bytes, a type byte (0x08 = unsigned byte), a dimension count, then one big-endian
// uint32 per dimension, then the values. Images: magic 0x00000803, [N, H, W]; labels: 0x00000801, [N].
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import type { Dataset } from './dataset';
import { DataError, fileError, listForMessage } from './errors';
import { isGzip } from './textEncoding';

export const idxImagesMagic = 0x00000803;
export const idxLabelsMagic = 0x00000801;
const unsignedByteType = 0x08;
const typeNames: Record<number, string> = { 0x08: 'unsigned byte', 0x09: 'signed byte', 0x0b: 'int16', 0x0c: 'int32', 0x0d: 'float32', 0x0e: 'float64' };

export interface IdxArray {
  dims: number[];
  data: Uint8Array;
}

export interface IdxOptions {
  /** The labels file; found beside the images file by name when absent (see `labelsFileCandidates`). */
  labelsPath?: string;
  /** Known classes (a trained model's labels): each label value, as text, must be one of them. */
  classLabels?: readonly string[];
  /** Only the first `limit` examples. */
  limit?: number;
  /** Swap rows and columns of every image (EMNIST stores its images transposed). */
  transpose?: boolean;
}

/** The most values one IDX file may hold (2 GiB of bytes): a header claiming more is refused before reading on. */
export const maxIdxValues = 2 ** 31 - 1;
/**
 * Pixels per image NN Studio reads (4096 x 4096): a header claiming more is damaged, and is refused before
 * a gzipped file is decompressed (a bomb whose header claims 2 images of 2 x 218 million pixels otherwise
 * decompressed a whole gigabyte before the size check: fuzz seed 913001, case 16066).
 */
export const maxImagePixels = 4096 * 4096;

/** An IDX file's bytes; `overflowed` when a gzip file decompressed past the size its header claims (and was cut there). */
export interface IdxBytes {
  bytes: Uint8Array;
  overflowed: boolean;
}

/**
 * The size an IDX file must have according to the header at its start, or undefined until enough of it is
 * known; a header that is no IDX images or labels header, or claims more than maxIdxValues, needs no more
 * than the header (parseIdx reports it).
 */
function claimedIdxSize(head: Uint8Array): number | undefined {
  if (head.length < 4) return undefined;
  if (head[0] !== 0 || head[1] !== 0 || head[2] !== unsignedByteType || (head[3] !== 1 && head[3] !== 3)) return 4;
  const headerSize = 4 + 4 * head[3];
  if (head.length < headerSize) return undefined;
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  let values = 1;
  for (let i = 0; i < head[3]; i++) values *= view.getUint32(4 + 4 * i, false);
  const pixels = head[3] === 3 ? view.getUint32(8, false) * view.getUint32(12, false) : 0;
  return values > maxIdxValues || pixels > maxImagePixels ? headerSize : headerSize + values;
}

/**
 * Reads an IDX file, gunzipping it when it starts with the gzip magic 1f 8b. A gzip file is decompressed
 * only as far as its header says the file goes (plus one byte): a small file that expands to gigabytes
 * (a "gzip bomb", or a damaged one) is cut there instead of filling the memory.
 */
export async function readIdxBytes(file: string, options: { headerOnly?: boolean } = {}): Promise<IdxBytes> {
  let bytes: Buffer;
  try {
    bytes = await fs.promises.readFile(file);
  } catch (error) {
    throw fileError(file, error);
  }
  if (!isGzip(bytes)) return { bytes, overflowed: false };
  const gunzip = zlib.createGunzip();
  // Into one buffer that grows with the data actually decompressed (never ahead of it: a header's claim
  // allocates nothing), up to the header's size + 1 byte, which tells that there is more.
  let output = Buffer.alloc(0);
  let total = 0;
  let limit: number | undefined;
  try {
    gunzip.end(bytes);
    for await (const chunk of gunzip as AsyncIterable<Buffer>) {
      const cap = limit === undefined ? Infinity : limit + 1;
      const wanted = Math.min(total + chunk.length, cap);
      if (wanted > output.length) {
        const grown = Buffer.allocUnsafe(Math.min(Math.max(wanted, 2 * output.length, 65536), cap));
        output.copy(grown, 0, 0, total);
        output = grown;
      }
      total += chunk.copy(output, total, 0, wanted - total);
      if (limit === undefined) limit = claimedIdxSize(output.subarray(0, total));
      // Enough to read the header: stop decompressing (loadIdx checks the item count first).
      if (options.headerOnly && limit !== undefined) {
        gunzip.destroy();
        return { bytes: output.subarray(0, total), overflowed: false };
      }
      if (limit !== undefined && total > limit) {
        gunzip.destroy();
        return { bytes: output.subarray(0, limit + 1), overflowed: true };
      }
    }
  } catch (error) {
    throw new DataError(file, `is not a valid gzip file (${(error as Error).message})`);
  }
  return { bytes: output.subarray(0, total), overflowed: false };
}

/**
 * The item count (first dimension) an images (3 dimensions) or labels (1) header claims; undefined when the
 * bytes are no such header or claim more than maxIdxValues (parseIdx says why, on the whole file).
 */
function claimedItemCount(head: Uint8Array, dimensions: 1 | 3): number | undefined {
  const headerSize = 4 + 4 * dimensions;
  if (head.length < headerSize || head[0] !== 0 || head[1] !== 0 || head[2] !== unsignedByteType || head[3] !== dimensions) return undefined;
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  let values = 1;
  for (let i = 0; i < dimensions; i++) values *= view.getUint32(4 + 4 * i, false);
  return values > maxIdxValues ? undefined : view.getUint32(4, false);
}

/** Parses and checks one IDX file held in memory; `expectedMagic` picks images or labels. */
export function parseIdx(bytes: Uint8Array, file: string, expectedMagic: number, overflowed = false): IdxArray {
  const what = expectedMagic === idxImagesMagic ? 'images' : 'labels';
  if (bytes.length < 4) throw new DataError(file, `is too short for an IDX header (${bytes.length} bytes)`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magic = view.getUint32(0, false);
  if (magic !== expectedMagic) {
    const expectedDims = expectedMagic & 0xff;
    let hint = '';
    if (bytes[0] !== 0 || bytes[1] !== 0) hint = ' (not an IDX file)';
    else if (bytes[2] !== unsignedByteType) hint = ` (${typeNames[bytes[2]] ?? 'unknown'} values; only unsigned bytes are supported)`;
    else if (magic === idxLabelsMagic || magic === idxImagesMagic) hint = ` (an IDX ${magic === idxLabelsMagic ? 'labels' : 'images'} file)`;
    else hint = ` (${bytes[3]} dimensions)`;
    throw new DataError(file, `bad magic number 0x${hex(magic)}, expected 0x${hex(expectedMagic)} for an IDX ${what} file with ${expectedDims} dimension(s)${hint}`);
  }
  const dimCount = bytes[3];
  const headerSize = 4 + 4 * dimCount;
  if (bytes.length < headerSize) throw new DataError(file, `is truncated: ${bytes.length} bytes, shorter than its ${headerSize}-byte header`);
  const dims: number[] = [];
  for (let i = 0; i < dimCount; i++) dims.push(view.getUint32(4 + 4 * i, false));
  if (dims.slice(1).some((dim) => dim === 0)) throw new DataError(file, `has a zero dimension in its header (${dims.join('x')})`);
  const valueCount = dims.reduce((product, dim) => product * dim, 1);
  const expectedSize = headerSize + valueCount;
  const described = what === 'images' ? `${dims[0]} images of ${dims[1]}x${dims[2]}` : `${dims[0]} labels`;
  if (valueCount > maxIdxValues) {
    throw new DataError(file, `its header claims ${described} (${valueCount} values), more than NN Studio reads from one IDX file (${maxIdxValues}): a damaged header?`);
  }
  if (what === 'images' && dims[1] * dims[2] > maxImagePixels) {
    throw new DataError(file, `its header claims images of ${dims[1]}x${dims[2]} pixels, more than NN Studio reads per image (4096x4096): a damaged header?`);
  }
  if (overflowed) {
    throw new DataError(file, `decompresses to more than the ${expectedSize} bytes its header (${described}) accounts for`);
  }
  if (bytes.length < expectedSize) {
    throw new DataError(file, `is truncated: ${bytes.length} bytes, but its header (${described}) needs ${expectedSize}`);
  }
  if (bytes.length > expectedSize) {
    throw new DataError(file, `has ${bytes.length - expectedSize} bytes more than its header (${described}) accounts for (${expectedSize} bytes)`);
  }
  return { dims, data: bytes.subarray(headerSize, expectedSize) };
}

/** Builds an IDX file of unsigned bytes (tests, exports). */
export function encodeIdx(dims: readonly number[], data: Uint8Array): Buffer {
  const header = Buffer.alloc(4 + 4 * dims.length);
  header.writeUInt32BE(0x00000800 | dims.length, 0);
  dims.forEach((dim, i) => header.writeUInt32BE(dim, 4 + 4 * i));
  return Buffer.concat([header, data]);
}

/**
 * Where the labels file of an images file may be, most likely first: `images` → `labels`, `idx3` → `idx1`
 * in the name (train-images-idx3-ubyte, t10k-images.idx3-ubyte, emnist-digits-train-images-idx3-ubyte),
 * with and without `.gz`.
 */
export function labelsFileCandidates(imagesFile: string): string[] {
  const folder = path.dirname(imagesFile);
  const base = path.basename(imagesFile);
  const gz = /\.gz$/i.test(base);
  const stem = gz ? base.slice(0, -3) : base;
  if (!/images/i.test(stem) && !/idx3/i.test(stem)) return [];
  const labelsStem = stem.replace(/images/g, 'labels').replace(/IMAGES/g, 'LABELS').replace(/Images/g, 'Labels').replace(/idx3/gi, 'idx1');
  if (labelsStem === stem) return [];
  const names = gz ? [`${labelsStem}.gz`, labelsStem] : [labelsStem, `${labelsStem}.gz`];
  return names.map((name) => path.join(folder, name));
}

/** The labels file found beside the images file, or a DataError listing where it looked. */
export function findLabelsFile(imagesFile: string): string {
  const candidates = labelsFileCandidates(imagesFile);
  for (const candidate of candidates) if (fs.existsSync(candidate)) return candidate;
  if (candidates.length === 0) {
    throw new DataError(imagesFile, 'no labels file given, and its name has no "images" part to derive one from');
  }
  throw new DataError(imagesFile, `labels file not found beside it (looked for ${candidates.map((c) => path.basename(c)).join(', ')}); give it explicitly`);
}

/** Loads an IDX images file and its labels into a dataset: pixels / 255 in [0,1], shape [1,H,W]. */
export async function loadIdx(imagesFile: string, options: IdxOptions = {}): Promise<Dataset> {
  if (options.limit !== undefined && !(Number.isInteger(options.limit) && options.limit > 0)) {
    throw new Error(`limit must be a positive integer, got ${options.limit}`);
  }
  const labelsFile = options.labelsPath ?? findLabelsFile(imagesFile);
  const mismatch = (imageCount: number, labelCount: number) =>
    new DataError(imagesFile, `has ${imageCount} images but ${path.basename(labelsFile)} has ${labelCount} labels`);
  // Both headers first: a gzip file whose item count disagrees with the other file's is refused before
  // it is decompressed (behind a plausible header it could hold hundreds of megabytes).
  const [imagesHead, labelsHead] = await Promise.all([
    readIdxBytes(imagesFile, { headerOnly: true }),
    readIdxBytes(labelsFile, { headerOnly: true }),
  ]);
  const claimedImages = claimedItemCount(imagesHead.bytes, 3);
  const claimedLabels = claimedItemCount(labelsHead.bytes, 1);
  if (claimedImages !== undefined && claimedImages > 0 && claimedLabels !== undefined && claimedImages !== claimedLabels) {
    throw mismatch(claimedImages, claimedLabels);
  }
  const imageBytes = await readIdxBytes(imagesFile);
  const images = parseIdx(imageBytes.bytes, imagesFile, idxImagesMagic, imageBytes.overflowed);
  const [imageCount, height, width] = images.dims;
  if (imageCount === 0) throw new DataError(imagesFile, 'contains no images');
  const labelBytes = await readIdxBytes(labelsFile);
  const labelArray = parseIdx(labelBytes.bytes, labelsFile, idxLabelsMagic, labelBytes.overflowed);
  if (labelArray.dims[0] !== imageCount) throw mismatch(imageCount, labelArray.dims[0]);
  const count = Math.min(imageCount, options.limit ?? imageCount);
  const pixels = height * width;

  const features = new Float32Array(count * pixels);
  const source = images.data;
  const scaled = Float32Array.from({ length: 256 }, (_, value) => value / 255); // byte → [0,1]
  if (options.transpose) {
    for (let n = 0; n < count; n++) {
      const base = n * pixels;
      for (let r = 0; r < height; r++) {
        for (let c = 0; c < width; c++) features[base + r * width + c] = scaled[source[base + c * height + r]];
      }
    }
  } else {
    for (let i = 0; i < features.length; i++) features[i] = scaled[source[i]];
  }

  const values = labelArray.data.subarray(0, count);
  const labels = new Int32Array(count);
  let classLabels: string[];
  if (options.classLabels !== undefined) {
    classLabels = [...options.classLabels];
    const index = new Map(classLabels.map((label, i) => [label.trim(), i]));
    for (let i = 0; i < count; i++) {
      const found = index.get(String(values[i]));
      if (found === undefined) {
        throw new DataError(labelsFile, `label ${values[i]} of item ${i + 1} is not one of the model's classes (${listForMessage(classLabels)})`);
      }
      labels[i] = found;
    }
  } else {
    // 0..max when the labels start at 0 (digits, Fashion-MNIST, EMNIST balanced); else the distinct values.
    let min = 255;
    let max = 0;
    const present = new Uint8Array(256);
    for (let i = 0; i < count; i++) {
      const value = values[i];
      present[value] = 1;
      if (value < min) min = value;
      if (value > max) max = value;
    }
    const classValues = min === 0
      ? Array.from({ length: max + 1 }, (_, value) => value)
      : Array.from(present.keys()).filter((value) => present[value] === 1);
    const rank = new Int32Array(256).fill(-1);
    classValues.forEach((value, i) => { rank[value] = i; });
    for (let i = 0; i < count; i++) labels[i] = rank[values[i]];
    classLabels = classValues.map(String);
  }

  return {
    features,
    labels,
    count,
    featureShape: [1, height, width],
    featureNames: Array.from({ length: pixels }, (_, i) => `pixel${i}`),
    classLabels,
    source: imagesFile,
    pixelScale: 255,
  };
}

/** Whether the file starts like an IDX file (raw, or gzip whose first bytes decompress to an IDX magic). */
export async function looksLikeIdx(file: string): Promise<boolean> {
  let handle: fs.promises.FileHandle | undefined;
  try {
    handle = await fs.promises.open(file, 'r');
    const head = Buffer.alloc(4096);
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    let start = head.subarray(0, bytesRead);
    if (isGzip(start)) {
      start = zlib.gunzipSync(start, { finishFlush: zlib.constants.Z_SYNC_FLUSH });
    }
    return start.length >= 4 && start[0] === 0 && start[1] === 0 && start[2] === unsignedByteType && (start[3] === 1 || start[3] === 3);
  } catch {
    return false; // unreadable or not gzip after all: not IDX by its content; the loader then reports the file
  } finally {
    await handle?.close();
  }
}

function hex(value: number): string {
  return value.toString(16).padStart(8, '0');
}
