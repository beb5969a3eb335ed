// Decodes one image file (PNG, JPEG, WebP, GIF, TIFF, AVIF through sharp's libvips; BMP through app/core/data/bmp.ts) and
// brings it to a model's size: turned upright by its EXIF orientation, transparency flattened onto black, then
// resized by a centre crop ('crop': fills the size, cuts the overflow) or a letterbox ('letterbox': fits
// inside, black bars). The result is always RGB bytes; the folder loader decides on grey or colour after.
import sharp, { type Sharp } from 'sharp';
import { decodeBmp, looksLikeBmp } from '../core/data/bmp';
import type { ImageFit } from '../core/data/imageFolder';

export interface ImageSize {
  width: number;
  height: number;
}

/** height * width * 3 bytes, RGB interleaved, rows top to bottom. */
export type RgbPixels = Uint8Array;

const black = { r: 0, g: 0, b: 0, alpha: 1 };

/** An empty file in plain words (sharp says "Input Buffer is empty"). */
function refuseEmpty(bytes: Uint8Array): void {
  if (bytes.length === 0) throw new Error('the file is empty');
}

/** A sharp pipeline on the file's first frame (GIF, animated WebP), or on a BMP's decoded pixels. */
function open(bytes: Uint8Array): Sharp {
  refuseEmpty(bytes);
  if (looksLikeBmp(bytes)) {
    const bmp = decodeBmp(bytes);
    return sharp(bmp.data, { raw: { width: bmp.width, height: bmp.height, channels: 3 } });
  }
  return sharp(bytes, { pages: 1, failOn: 'error' });
}

/** The image's upright size, read from its header (BMP: decoded). Throws when it is not an image sharp reads. */
export async function imageSize(bytes: Uint8Array): Promise<ImageSize> {
  refuseEmpty(bytes);
  if (looksLikeBmp(bytes)) {
    const { width, height } = decodeBmp(bytes);
    return { width, height };
  }
  const meta = await sharp(bytes, { pages: 1, failOn: 'error' }).metadata();
  if (!meta.width || !meta.height) throw new Error('no image size in the file');
  // EXIF orientations 5-8 turn the picture a quarter: its upright width is the stored height.
  const turned = (meta.orientation ?? 1) >= 5;
  return turned ? { width: meta.height, height: meta.width } : { width: meta.width, height: meta.height };
}

/** The image upright, flattened onto black and resized to `size` by `fit`, as RGB bytes. */
export async function decodeImage(bytes: Uint8Array, size: ImageSize, fit: ImageFit): Promise<RgbPixels> {
  const { data, info } = await open(bytes)
    .rotate()
    .flatten({ background: black })
    .resize(size.width, size.height, { fit: fit === 'crop' ? 'cover' : 'contain', position: 'centre', background: black })
    .toColourspace('srgb')
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  if (info.channels !== 3 || info.width !== size.width || info.height !== size.height) {
    throw new Error(`decoded to ${info.width}x${info.height} with ${info.channels} channels, expected ${size.width}x${size.height} RGB`);
  }
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/**
 * Whether an image has colour: more than 1 % of its pixels with channels more than 24 apart (of 255). A grey
 * picture saved as RGB JPEG drifts a few levels between channels; that is not colour.
 */
export function hasColour(pixels: RgbPixels): boolean {
  const count = pixels.length / 3;
  let coloured = 0;
  for (let at = 0; at < pixels.length; at += 3) {
    const r = pixels[at];
    const g = pixels[at + 1];
    const b = pixels[at + 2];
    if (Math.max(r, g, b) - Math.min(r, g, b) > 24) coloured++;
  }
  return coloured > count * 0.01;
}

/**
 * RGB bytes (HWC) into `out` at `offset` as C*H*W values in [0,1], CHW order; one channel takes the luma
 * (ITU-R BT.601, what sharp's greyscale uses), three keep R, G and B.
 */
export function writePlanes(pixels: RgbPixels, channels: 1 | 3, out: Float32Array, offset: number): void {
  const plane = pixels.length / 3;
  for (let i = 0; i < plane; i++) {
    const r = pixels[i * 3];
    const g = pixels[i * 3 + 1];
    const b = pixels[i * 3 + 2];
    if (channels === 1) {
      out[offset + i] = (0.299 * r + 0.587 * g + 0.114 * b) / 255;
    } else {
      out[offset + i] = r / 255;
      out[offset + plane + i] = g / 255;
      out[offset + 2 * plane + i] = b / 255;
    }
  }
}
