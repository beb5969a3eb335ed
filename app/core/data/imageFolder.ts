// Image folders (docs/DATA.md "Image folders"): one subfolder per class, its images (searched through its own
// subfolders too) the class's examples. This module finds the files and holds the rules (which files are
// images, the default size, when undecodable files refuse the folder); the decoding itself is sharp's
// (app/services/imageDecoding.ts) and the loading app/services/imageFolders.ts.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DataError } from './errors';
import { imageExtensions, isHeicFile, isHiddenName, isImageFile } from './imageFiles';

export { imageExtensions, isImageFile } from './imageFiles';

export type ImageFit = 'crop' | 'letterbox';
export const imageFits: readonly ImageFit[] = ['crop', 'letterbox'];

/** The default size's longer side is at most this (the median image's size scaled down to fit). */
export const defaultSizeCap = 64;
/** The largest side one may choose (a 3x512x512 image is 3 MiB of features). */
export const maxImageSide = 512;
/** More than this share of the image files undecodable refuses the folder (fewer are skipped with a note). */
export const maxUndecodableShare = 0.1;
/** The most feature values a folder may become (4 GiB of Float32): beyond, choose a smaller size. */
export const maxFeatureValues = 1 << 30;

export interface ClassFolder {
  name: string;
  /** Image files, relative to the root folder ("cat/001.jpg"), in natural order. */
  files: string[];
}

export interface FolderScan {
  root: string;
  classes: ClassFolder[];
  /** Files that are not images by their extension (relative paths), left out. */
  otherFiles: string[];
  /** Subfolders without any image, left out. */
  emptyFolders: string[];
  /** Images directly in the root folder (no class): read only when the folder is read unlabeled. */
  looseImages: string[];
}

const naturalOrder = (a: string, b: string): number => a.localeCompare(b, 'en', { numeric: true });

/** Hidden names, and Windows' folder files, are not data. */
function isHidden(name: string): boolean {
  return isHiddenName(name) || name === 'Thumbs.db' || name === 'desktop.ini';
}

/** Every file under `folder`, relative to `root`, in natural order (hidden ones left out). */
function filesUnder(root: string, folder: string): string[] {
  const entries = fs.readdirSync(folder, { withFileTypes: true }).filter((entry) => !isHidden(entry.name));
  entries.sort((a, b) => naturalOrder(a.name, b.name));
  return entries.flatMap((entry) => {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) return filesUnder(root, full);
    return entry.isFile() ? [path.relative(root, full)] : [];
  });
}

/** The class folders of `root` and what else it holds; throws a DataError when there is nothing to read. */
export function scanImageFolder(root: string): FolderScan {
  if (!fs.existsSync(root)) throw new DataError(root, 'no such folder');
  if (!fs.statSync(root).isDirectory()) throw new DataError(root, 'is not a folder');
  const scan: FolderScan = { root, classes: [], otherFiles: [], emptyFolders: [], looseImages: [] };
  const entries = fs.readdirSync(root, { withFileTypes: true }).filter((entry) => !isHidden(entry.name));
  entries.sort((a, b) => naturalOrder(a.name, b.name));
  for (const entry of entries) {
    if (entry.isDirectory()) {
      const files = filesUnder(root, path.join(root, entry.name));
      const images = files.filter(isImageFile);
      scan.otherFiles.push(...files.filter((file) => !isImageFile(file)));
      if (images.length > 0) scan.classes.push({ name: entry.name, files: images });
      else scan.emptyFolders.push(entry.name);
    } else if (entry.isFile()) {
      (isImageFile(entry.name) ? scan.looseImages : scan.otherFiles).push(entry.name);
    }
  }
  return scan;
}

/** A labelled folder needs class folders with images; says what the folder holds instead. */
export function checkClassFolders(scan: FolderScan): void {
  if (scan.classes.length > 0) return;
  const found = scan.looseImages.length > 0
    ? `its ${scan.looseImages.length} images are not in class folders`
    : scan.emptyFolders.length > 0 ? `its folders (${scan.emptyFolders.slice(0, 3).join(', ')}) hold no images` : 'it holds no images';
  throw new DataError(scan.root, `expected one subfolder of images per class (e.g. cats/, dogs/), but ${found}; images are ${imageExtensions.join(' ')}`);
}

/** The plain-language notes about what was left out of the folder. */
export function scanNotes(scan: FolderScan, unlabeled: boolean): string[] {
  const notes: string[] = [];
  const heic = scan.otherFiles.filter(isHeicFile);
  const other = scan.otherFiles.filter((file) => !isHeicFile(file));
  if (heic.length > 0) notes.push(`${plural(heic.length, 'HEIC photo')} left out: HEIC cannot be read here; export ${heic.length === 1 ? 'it' : 'them'} as JPEG (on an iPhone: Settings › Camera › Formats › Most Compatible) (${listed(heic)})`);
  if (other.length > 0) notes.push(`${plural(other.length, 'file')} left out, not images by name (${listed(other)})`);
  if (scan.emptyFolders.length > 0) notes.push(`${plural(scan.emptyFolders.length, 'folder')} without images left out (${listed(scan.emptyFolders)})`);
  if (!unlabeled && scan.looseImages.length > 0) {
    notes.push(`${plural(scan.looseImages.length, 'image')} outside the class folders left out (${listed(scan.looseImages)})`);
  }
  if (!unlabeled) notes.push(...wrapperNote(scan));
  return notes;
}

/**
 * One class folder whose images lie in subfolders of their own ("photos/cats/…", "photos/dogs/…"): most likely
 * the folder above the class folders was chosen. Said on opening, before a run says a classifier needs two.
 */
function wrapperNote(scan: FolderScan): string[] {
  if (scan.classes.length !== 1) return [];
  const only = scan.classes[0];
  const inner = [...new Set(only.files.map((file) => file.split(/[\\/]/)).filter((parts) => parts.length >= 3).map((parts) => `${parts[1]}/`))];
  if (inner.length < 2) return [];
  return [`one class folder (${only.name}/), whose images lie in ${inner.length} folders of their own (${listed(inner)}): if those are the classes, open ${only.name} itself`];
}

/**
 * The default [height, width]: the median height and the median width of the images, scaled down together
 * (aspect kept) so the longer side is at most defaultSizeCap, at least 1 pixel a side.
 */
export function defaultImageSize(sizes: readonly { width: number; height: number }[], cap = defaultSizeCap): [number, number] {
  if (sizes.length === 0) throw new Error('no image to take a size from');
  const height = median(sizes.map((size) => size.height));
  const width = median(sizes.map((size) => size.width));
  const scale = Math.min(1, cap / Math.max(height, width));
  return [Math.max(1, Math.round(height * scale)), Math.max(1, Math.round(width * scale))];
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : Math.round((sorted[middle - 1] + sorted[middle]) / 2);
}

export interface Undecodable {
  /** Relative to the root folder. */
  file: string;
  reason: string;
}

/**
 * The documented rule: undecodable images are skipped and named in a note, unless more than
 * maxUndecodableShare of the images (or all of them) fail: then the folder is refused, naming them.
 */
export function undecodableOutcome(root: string, failures: readonly Undecodable[], total: number): string | undefined {
  if (failures.length === 0) return undefined;
  const named = failures.slice(0, 3).map((failure) => `${failure.file} (${failure.reason})`).join('; ');
  const more = failures.length > 3 ? `; and ${failures.length - 3} more` : '';
  const share = `${failures.length} of ${total} images`;
  if (failures.length === total || failures.length > total * maxUndecodableShare) {
    throw new DataError(root, `${share} cannot be read as images (more than ${maxUndecodableShare * 100} %): ${named}${more}`);
  }
  return `${share} could not be decoded and were skipped: ${named}${more}`;
}

/** `image size 30x30`: the chosen size and where it came from, for the notes. */
export function sizeNote(size: [number, number], given: boolean, fit: ImageFit, count: number): string {
  const how = fit === 'crop' ? 'centre crop' : 'letterbox (black bars)';
  return `images resized to ${size[0]}x${size[1]} (height x width) by ${how}${given ? '' : `: the median size of ${plural(count, 'image')}, longer side capped at ${defaultSizeCap}`}`;
}

/** Checks a chosen size: whole pixels, 1..maxImageSide a side. */
export function checkImageSize(size: readonly number[], where: string): [number, number] {
  if (size.length !== 2 || size.some((side) => !Number.isInteger(side) || side < 1 || side > maxImageSide)) {
    throw new Error(`${where}: image size must be HEIGHTxWIDTH in whole pixels, 1 to ${maxImageSide} a side (got ${size.join('x')})`);
  }
  return [size[0], size[1]];
}

/** "64x48" or "64" (square) → [64, 48]. */
export function parseImageSize(text: string): [number, number] {
  const parts = text.trim().split(/\s*[x×,]\s*/i).map((part) => (/^\d+$/.test(part) ? Number(part) : NaN));
  return checkImageSize(parts.length === 1 ? [parts[0], parts[0]] : parts, `--image-size "${text}"`);
}

/** At most three items, then an ellipsis: the notes' lists of files and folders. */
export function listed(items: readonly string[]): string {
  return items.length > 3 ? `${items.slice(0, 3).join(', ')}, …` : items.join(', ');
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}
