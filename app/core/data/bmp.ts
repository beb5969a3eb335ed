// A small BMP reader: sharp's prebuilt libvips has no BMP loader, so Windows bitmaps are decoded here into
// RGB bytes that then go through sharp like any other image (app/services/imageDecoding.ts). It reads the
// uncompressed kinds Paint and most tools write: 1, 4 and 8 bits with a palette, 16 bits (5-5-5 or bit
// fields), 24 bits, 32 bits (plain or bit fields), bottom-up or top-down. RLE and embedded JPEG/PNG bitmaps are
// refused with a message naming the compression. Alpha is ignored (32-bit BMPs rarely mean it).

export interface RgbImage {
  width: number;
  height: number;
  /** height * width * 3 bytes, rows top to bottom, RGB interleaved. */
  data: Uint8Array;
}

/** The largest side accepted: 16 384 px (a 16k x 16k RGB image is 768 MiB already). */
export const maxBmpSide = 16_384;

const compressionNames: Record<number, string> = { 1: 'RLE8', 2: 'RLE4', 4: 'embedded JPEG', 5: 'embedded PNG' };

export function looksLikeBmp(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === 0x42 && bytes[1] === 0x4d;
}

/** Decodes a BMP file's bytes; throws an Error saying what is wrong or unsupported. */
export function decodeBmp(bytes: Uint8Array): RgbImage {
  if (!looksLikeBmp(bytes) || bytes.length < 26) throw new Error('not a BMP file (no "BM" header)');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const dataOffset = view.getUint32(10, true);
  const headerSize = view.getUint32(14, true);
  const core = headerSize === 12;
  if (!core && headerSize < 40) throw new Error(`BMP header of ${headerSize} bytes is not one this reader knows`);
  if (14 + headerSize > bytes.length) throw new Error('BMP file cut short in its header');
  const width = core ? view.getUint16(18, true) : view.getInt32(18, true);
  const rawHeight = core ? view.getInt16(22, true) : view.getInt32(22, true);
  const bits = view.getUint16(core ? 24 : 28, true);
  const compression = core ? 0 : view.getUint32(30, true);
  const topDown = rawHeight < 0;
  const height = Math.abs(rawHeight);
  if (width <= 0 || height <= 0 || width > maxBmpSide || height > maxBmpSide) {
    throw new Error(`BMP size ${width}x${height} is outside 1..${maxBmpSide} pixels a side`);
  }
  if (compressionNames[compression]) throw new Error(`${compressionNames[compression]}-compressed BMP is not supported; save it as PNG`);
  if (compression !== 0 && compression !== 3) throw new Error(`BMP compression ${compression} is not supported; save it as PNG`);
  const pixel = pixelReader(view, bytes, { headerSize, bits, compression, core });
  const stride = Math.floor((bits * width + 31) / 32) * 4;
  if (dataOffset + stride * height > bytes.length) throw new Error(`BMP file cut short: ${bytes.length} bytes, its pixels need ${dataOffset + stride * height}`);
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    const row = dataOffset + (topDown ? y : height - 1 - y) * stride;
    for (let x = 0; x < width; x++) pixel(row, x, data, (y * width + x) * 3);
  }
  return { width, height, data };
}

type PixelReader = (row: number, x: number, out: Uint8Array, at: number) => void;

interface Layout {
  headerSize: number;
  bits: number;
  compression: number;
  core: boolean;
}

/** How to read pixel x of the row starting at byte `row`, into out[at..at+2] as RGB. */
function pixelReader(view: DataView, bytes: Uint8Array, { headerSize, bits, compression, core }: Layout): PixelReader {
  if (bits === 1 || bits === 4 || bits === 8) {
    if (compression !== 0) throw new Error(`a ${bits}-bit BMP with bit fields is not valid`);
    const palette = readPalette(view, bytes, headerSize, bits, core);
    const perByte = 8 / bits;
    const mask = (1 << bits) - 1;
    return (row, x, out, at) => {
      const byte = bytes[row + Math.floor(x / perByte)];
      const index = (byte >> ((perByte - 1 - (x % perByte)) * bits)) & mask;
      const colour = palette[Math.min(index, palette.length - 1)];
      out[at] = colour[0];
      out[at + 1] = colour[1];
      out[at + 2] = colour[2];
    };
  }
  if (bits === 24) {
    if (compression !== 0) throw new Error('a 24-bit BMP with bit fields is not valid');
    return (row, x, out, at) => {
      const p = row + x * 3;
      out[at] = bytes[p + 2];
      out[at + 1] = bytes[p + 1];
      out[at + 2] = bytes[p];
    };
  }
  if (bits === 16 || bits === 32) {
    const masks = compression === 3 ? readMasks(view, bytes, headerSize) : bits === 16 ? [0x7c00, 0x03e0, 0x001f] : [0xff0000, 0x00ff00, 0x0000ff];
    const channels = masks.map(maskChannel);
    return (row, x, out, at) => {
      const value = bits === 16 ? view.getUint16(row + x * 2, true) : view.getUint32(row + x * 4, true);
      for (let c = 0; c < 3; c++) out[at + c] = channels[c](value);
    };
  }
  throw new Error(`a ${bits}-bit BMP is not supported`);
}

function readPalette(view: DataView, bytes: Uint8Array, headerSize: number, bits: number, core: boolean): number[][] {
  const entrySize = core ? 3 : 4;
  const used = core ? 0 : view.getUint32(46, true);
  const count = used > 0 && used <= 1 << bits ? used : 1 << bits;
  const start = 14 + headerSize;
  if (start + count * entrySize > bytes.length) throw new Error('BMP file cut short in its palette');
  return Array.from({ length: count }, (_, i) => {
    const p = start + i * entrySize;
    return [bytes[p + 2], bytes[p + 1], bytes[p]];
  });
}

/** Bit-field masks: in the header from V2 (52+ bytes) on, else in the 12 bytes after a 40-byte header. */
function readMasks(view: DataView, bytes: Uint8Array, headerSize: number): number[] {
  const at = 14 + 40;
  if (at + 12 > bytes.length) throw new Error('BMP file cut short in its bit fields');
  const masks = [view.getUint32(at, true), view.getUint32(at + 4, true), view.getUint32(at + 8, true)];
  if (masks.some((mask) => mask === 0)) throw new Error(`BMP bit fields with an empty mask (header of ${headerSize} bytes)`);
  return masks;
}

/** Reads a channel under `mask` and scales it to 0-255 (5 bits: 31 → 255). */
function maskChannel(mask: number): (value: number) => number {
  let shift = 0;
  while (((mask >>> shift) & 1) === 0) shift++;
  const max = mask >>> shift;
  return (value) => Math.round((((value & mask) >>> shift) * 255) / max);
}
