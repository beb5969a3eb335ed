// Builds image folders for the tests (unit and e2e): MNIST digits written as coloured images of mixed sizes
// and formats, one subfolder per class, like a user's folder of photos (issue 15).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { zipSync } from 'fflate';
import sharp from 'sharp';
import { loadBuiltinMnist } from '../../app/core/data/mnist';

export interface DigitFolderOptions {
  /** The digits used as classes (folder names are these digits' names). */
  digits?: number[];
  perClass?: number;
  /** Tint the digits (colour); false writes them grey. */
  colour?: boolean;
  /** Formats written in turn (each image one of them). */
  formats?: Array<'png' | 'jpeg' | 'webp' | 'gif' | 'bmp' | 'tiff' | 'avif'>;
  /** Folder name for each digit (default: the digit's English name). */
  names?: string[];
}

export const digitNames = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
const tints = [[255, 80, 80], [80, 255, 80], [90, 140, 255], [255, 220, 60], [255, 255, 255]];

/** Writes the folder under `root` (created); returns the relative paths written, per class. */
export async function writeDigitFolder(root: string, options: DigitFolderOptions = {}): Promise<Record<string, string[]>> {
  const digits = options.digits ?? [0, 1, 2];
  const perClass = options.perClass ?? 12;
  const formats = options.formats ?? ['png', 'jpeg'];
  const mnist = await loadBuiltinMnist('test', { limit: 2000 });
  const written: Record<string, string[]> = {};
  let serial = 0;
  for (const [classIndex, digit] of digits.entries()) {
    const name = options.names?.[classIndex] ?? digitNames[digit];
    fs.mkdirSync(path.join(root, name), { recursive: true });
    written[name] = [];
    let taken = 0;
    for (let i = 0; i < mnist.count && taken < perClass; i++) {
      if (mnist.labels[i] !== digit) continue;
      const tint = options.colour === false ? [255, 255, 255] : tints[serial % tints.length];
      const side = 20 + ((serial * 7) % 21); // 20..40 px, mixed sizes
      const format = formats[serial % formats.length];
      const file = path.join(name, `${digit}-${taken}.${format === 'jpeg' ? 'jpg' : format}`);
      fs.writeFileSync(path.join(root, file), await encodeDigit(mnist.features.subarray(i * 784, (i + 1) * 784), tint, side, format));
      written[name].push(file);
      taken++;
      serial++;
    }
  }
  return written;
}

/** One 28x28 digit (values 0..1) tinted, resized to side x side and encoded. */
async function encodeDigit(digit: Float32Array, tint: number[], side: number, format: string): Promise<Buffer> {
  const rgb = Buffer.alloc(28 * 28 * 3);
  for (let p = 0; p < 784; p++) for (let c = 0; c < 3; c++) rgb[p * 3 + c] = Math.round(digit[p] * tint[c]);
  const resized = sharp(rgb, { raw: { width: 28, height: 28, channels: 3 } }).resize(side, side);
  if (format === 'bmp') {
    const { data, info } = await resized.raw().toBuffer({ resolveWithObject: true });
    return encodeBmp24(data, info.width, info.height);
  }
  return resized.toFormat(format as 'png').toBuffer();
}

/** A plain 24-bit bottom-up BMP (sharp writes none). */
export function encodeBmp24(rgb: Uint8Array, width: number, height: number): Buffer {
  const stride = Math.floor((24 * width + 31) / 32) * 4;
  const file = Buffer.alloc(54 + stride * height);
  file.write('BM', 0, 'latin1');
  file.writeUInt32LE(file.length, 2);
  file.writeUInt32LE(54, 10);
  file.writeUInt32LE(40, 14);
  file.writeInt32LE(width, 18);
  file.writeInt32LE(height, 22);
  file.writeUInt16LE(1, 26);
  file.writeUInt16LE(24, 28);
  for (let y = 0; y < height; y++) {
    const row = 54 + (height - 1 - y) * stride;
    for (let x = 0; x < width; x++) {
      const p = (y * width + x) * 3;
      file[row + x * 3] = rgb[p + 2];
      file[row + x * 3 + 1] = rgb[p + 1];
      file[row + x * 3 + 2] = rgb[p];
    }
  }
  return file;
}

/** A folder's files as a ZIP under the folder's own name, as zipping a folder makes them ("digits/zero/0.png"). */
export function zipOfFolder(root: string, top: string): Uint8Array {
  const entries: Record<string, Uint8Array> = {};
  const walk = (at: string, prefix: string): void => {
    for (const name of fs.readdirSync(at)) {
      const full = path.join(at, name);
      if (fs.statSync(full).isDirectory()) walk(full, `${prefix}${name}/`);
      else entries[`${prefix}${name}`] = fs.readFileSync(full);
    }
  };
  walk(root, `${top}/`);
  return zipSync(entries);
}
