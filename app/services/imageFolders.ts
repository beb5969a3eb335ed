// Loads an image folder (one subfolder per class) into a Dataset: [C,H,W] Float32 features in [0,1]
// (pixelScale 255, like IDX), the folder names as classes in natural order. Two passes when no size is given:
// the headers for the median size, then every image decoded at that size. Grey or colour is decided after
// decoding: RGB when any image has colour (imageDecoding.hasColour), else one channel.
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import type { Dataset } from '../core/data/dataset';
import { DataError } from '../core/data/errors';
import {
  checkClassFolders, checkImageSize, defaultImageSize, listed, maxFeatureValues, scanImageFolder, scanNotes, sizeNote, undecodableOutcome,
  type FolderScan, type ImageFit, type Undecodable,
} from '../core/data/imageFolder';
import { decodeImage, hasColour, imageSize, writePlanes, type ImageSize, type RgbPixels } from './imageDecoding';
import { imageFolderRoot } from './zipImages';

export interface ImageFolderOptions {
  /** [height, width]; default: the median size, longer side capped (imageFolder.defaultImageSize). */
  size?: [number, number];
  /** 1 or 3; default: 3 when any image has colour. */
  channels?: 1 | 3;
  /** Default 'crop'. */
  fit?: ImageFit;
  /** Every image under the folder, without classes (prediction input); classLabels are then `classLabels`. */
  unlabeled?: boolean;
  classLabels?: string[];
  /** At most this many images, taken in turn from each class. */
  limit?: number;
  /** The size and channels are a trained model's (eval, predict): the notes say so, not "as chosen". */
  forModel?: boolean;
}

interface Entry {
  file: string;
  label: number;
}

/** Below one coloured image in this many, the colour note names them and says how to read all as grey. */
const fewColouredShare = 20;

/** Images decoded at a time: sharp works on libuv's pool (4 threads by default). */
const concurrency = 8;

/** `folder`: a folder, or a ZIP of one (zipImages.ts). */
export async function loadImageFolder(folder: string, options: ImageFolderOptions = {}): Promise<Dataset> {
  const root = imageFolderRoot(folder);
  const scan = scanImageFolder(root);
  if (!options.unlabeled) checkClassFolders(scan);
  const entries = limitEntries(entriesOf(scan, options.unlabeled ?? false), options.limit);
  if (entries.length === 0) throw new DataError(root, 'holds no images');
  const fit = options.fit ?? 'crop';
  const failures: Undecodable[] = [];
  const given = options.size !== undefined;
  const size = given ? checkImageSize(options.size!, root) : defaultImageSize(await sizesOf(root, entries, failures));
  const [height, width] = size;
  const decoded = await mapLimited(entries, concurrency, async (entry) => {
    if (failures.some((failure) => failure.file === entry.file)) return undefined;
    try {
      return await decodeImage(await fsp.readFile(path.join(root, entry.file)), { width, height }, fit);
    } catch (error) {
      failures.push({ file: entry.file, reason: reasonOf(error) });
      return undefined;
    }
  });
  const failureNote = undecodableOutcome(root, sortFailures(failures), entries.length);
  const kept = entries.map((entry, i) => ({ entry, pixels: decoded[i] })).filter((item): item is { entry: Entry; pixels: RgbPixels } => item.pixels !== undefined);
  const colouredFiles = kept.filter((item) => hasColour(item.pixels)).map((item) => item.entry.file);
  const channels = options.channels ?? (colouredFiles.length > 0 ? 3 : 1);
  const imageValues = channels * height * width;
  if (kept.length * imageValues > maxFeatureValues) {
    throw new DataError(root, `${kept.length} images of ${channels}x${height}x${width} are too many values to hold; choose a smaller image size`);
  }
  const features = new Float32Array(kept.length * imageValues);
  const labels = new Int32Array(kept.length);
  kept.forEach((item, i) => {
    writePlanes(item.pixels, channels, features, i * imageValues);
    labels[i] = item.entry.label;
  });
  const notes = [
    ...scanNotes(scan, options.unlabeled ?? false),
    sizeNote(size, given, fit, entries.length),
    colourNote(channels, options.channels === undefined ? 'images' : options.forModel ? 'model' : 'user', colouredFiles, kept.length),
    ...(failureNote ? [failureNote] : []),
  ];
  return {
    features, labels, count: kept.length, featureShape: [channels, height, width], featureNames: [],
    classLabels: options.unlabeled ? [...(options.classLabels ?? [])] : scan.classes.map((folder) => folder.name),
    source: folder, pixelScale: 255, imageFit: fit, notes, exampleNames: kept.map((item) => item.entry.file),
  };
}

/** Each image with its class (the class folders' order); unlabeled: every image under the folder, label -1. */
function entriesOf(scan: FolderScan, unlabeled: boolean): Entry[] {
  if (unlabeled) {
    const files = [...scan.looseImages, ...scan.classes.flatMap((folder) => folder.files)];
    return files.map((file) => ({ file, label: -1 }));
  }
  return scan.classes.flatMap((folder, label) => folder.files.map((file) => ({ file, label })));
}

/** The first `limit` images taken in turn from each class, so every class stays in a quick run. */
function limitEntries(entries: Entry[], limit: number | undefined): Entry[] {
  if (limit === undefined || limit >= entries.length) return entries;
  const byClass = new Map<number, Entry[]>();
  for (const entry of entries) byClass.set(entry.label, [...(byClass.get(entry.label) ?? []), entry]);
  const queues = [...byClass.values()];
  const taken: Entry[] = [];
  for (let round = 0; taken.length < limit; round++) {
    for (const queue of queues) if (round < queue.length && taken.length < limit) taken.push(queue[round]);
  }
  return taken.sort((a, b) => entries.indexOf(a) - entries.indexOf(b));
}

/** The sizes of the images whose headers read; the others go to `failures`. */
async function sizesOf(root: string, entries: Entry[], failures: Undecodable[]): Promise<ImageSize[]> {
  const sizes = await mapLimited(entries, concurrency, async (entry) => {
    try {
      return await imageSize(await fsp.readFile(path.join(root, entry.file)));
    } catch (error) {
      failures.push({ file: entry.file, reason: reasonOf(error) });
      return undefined;
    }
  });
  const read = sizes.filter((size): size is ImageSize => size !== undefined);
  if (read.length === 0) undecodableOutcome(root, sortFailures(failures), entries.length);
  return read;
}

/** Who decided the channel count: the images (colour found or not), the user, or the model that reads them. */
type ChannelSource = 'images' | 'user' | 'model';

function colourNote(channels: 1 | 3, source: ChannelSource, colouredFiles: readonly string[], count: number): string {
  if (source !== 'images') {
    const how = source === 'user' ? 'as chosen' : 'as the model takes them';
    return channels === 3 ? `read in colour (RGB), ${how}` : `read as grayscale (one channel), ${how}`;
  }
  if (channels === 1) return `read as grayscale (one channel): none of the ${count} images has colour`;
  const coloured = colouredFiles.length;
  const read = `read in colour (RGB): ${coloured} of ${count} image${count === 1 ? '' : 's'} ${coloured === 1 ? 'has' : 'have'} colour`;
  // a few coloured images among grey ones make every image three channels: say which, and how to read them grey
  if (coloured * fewColouredShare >= count) return read;
  return `${read} (${listed(colouredFiles)}); grayscale (--channels 1, or Colour on the Data screen) reads them all with one channel`;
}

/** sharp's messages are long and technical; the first line is enough to tell a corrupt file. */
function reasonOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0].replace(/^Input (buffer|file) /, '').slice(0, 160);
}

/** Failures in file order (decoding runs several at once). */
function sortFailures(failures: Undecodable[]): Undecodable[] {
  return [...failures].sort((a, b) => a.file.localeCompare(b.file, 'en', { numeric: true }));
}

async function mapLimited<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** One uploaded image decoded as a model's training images were: its [C,H,W] and fit; values 0-255 in CHW order. */
export async function imageForModel(bytes: Uint8Array, shape: readonly number[], fit: ImageFit): Promise<number[]> {
  const [channels, height, width] = shape;
  if (shape.length !== 3 || (channels !== 1 && channels !== 3)) throw new Error(`the model takes ${shape.join('x')}, not an image of 1 or 3 channels`);
  const pixels = await decodeImage(bytes, { width, height }, fit);
  const planes = new Float32Array(channels * height * width);
  writePlanes(pixels, channels, planes, 0);
  return Array.from(planes, (value) => Math.round(value * 255 * 1000) / 1000);
}
