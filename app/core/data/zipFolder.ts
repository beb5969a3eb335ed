// A ZIP of an image folder as the folder's files: which entries count and the path each has in the folder.
// No Node modules (fflate reads ZIPs in Node and in the page alike). Shared by the CLI and serve
// (services/zipImages.ts writes the images to disk) and the browser (renderer/src/lib/zipFolder.ts sends them
// as a folder upload), so both read a ZIP the same way:
// - directories, hidden files and macOS's __MACOSX are not data; files that are not images stay out too;
// - a ZIP made by zipping a folder holds everything under that folder's name ("digits/0/a.png"): that one
//   top folder, when it holds folders, is the folder itself (its name becomes the dataset's), as when the
//   folder is dropped; files beside its class folders ("digits/README.md") stay what they are there;
// - a path that climbs out (".."), is absolute, or nests more than maxZipDepth deep is refused, naming it.
import { unzipSync } from 'fflate';
import { isHiddenName, isImageFile } from './imageFiles';

/** A ZIP that cannot be read as an image folder: the message starts with the ZIP's file name, like DataError's. */
export class ZipFolderError extends Error {
  override readonly name = 'ZipFolderError';
  constructor(zipName: string, readonly what: string) {
    super(`${zipName.replace(/^.*[\\/]/, '')}: ${what}`);
  }
}

/** Folders inside the image folder at most (the class folder and a few levels under it). */
export const maxZipDepth = 8;
/** Uncompressed bytes a ZIP may unpack to: a ZIP bomb is refused before it fills the disk. */
export const maxZipBytes = 4 * 1024 ** 3;

export interface ZipEntryPlace {
  /** The entry's name in the ZIP. */
  entry: string;
  /** Its path in the folder ("cats/001.jpg"). */
  path: string;
}

export interface ZipFolderLayout {
  /** The folder's name: the ZIP's single top folder, else the ZIP's file name without ".zip". */
  name: string;
  images: ZipEntryPlace[];
}

/** "a\\b/c" -> ["a", "b", "c"]; refuses what could land outside the folder. */
function partsOf(zipName: string, entry: string): string[] {
  const normalised = entry.replace(/\\/g, '/');
  if (normalised.startsWith('/') || /^[a-zA-Z]:/.test(normalised)) throw new ZipFolderError(zipName, `holds an absolute path (${entry}); it is not read`);
  const parts = normalised.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) throw new ZipFolderError(zipName, `holds a path that leaves the folder (${entry}); it is not read`);
  return parts;
}

/**
 * An entry's name as its maker wrote it. A ZIP without the UTF-8 flag (Info-ZIP's `zip`, many Windows tools)
 * has its names read byte for byte as Latin-1 (fflate): "zéro" arrives as "zÃ©ro". Names whose bytes are valid
 * UTF-8 with non-ASCII characters are read as UTF-8 (as 7-Zip and the file managers do); others stay as read.
 */
export function entryText(name: string): string {
  if (!/[\u0080-\u00ff]/.test(name) || /[^\u0000-\u00ff]/.test(name)) return name;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(name, (char) => char.charCodeAt(0)));
  } catch {
    return name;
  }
}

export function zipFolderLayout(zipName: string, entries: readonly string[]): ZipFolderLayout {
  const files = entries
    .filter((entry) => !entry.endsWith('/') && !entry.endsWith('\\'))
    .map((entry) => ({ entry, parts: partsOf(zipName, entryText(entry)) }))
    .filter(({ parts }) => parts.length > 0 && !parts.some(isHiddenName));
  if (files.length === 0) throw new ZipFolderError(zipName, 'holds no files');
  // one top folder holding folders: that folder itself, even with stray files beside its class folders
  const top = files[0].parts[0];
  const underOneFolder = files.every(({ parts }) => parts.length >= 2 && parts[0] === top) && files.some(({ parts }) => parts.length > 2);
  const baseName = zipName.replace(/^.*[\\/]/, '').replace(/\.zip$/i, '') || 'folder';
  const placed = files.map(({ entry, parts }) => ({ entry, parts: underOneFolder ? parts.slice(1) : parts }));
  for (const { entry, parts } of placed) {
    if (parts.length > maxZipDepth + 1) throw new ZipFolderError(zipName, `${entry} is more than ${maxZipDepth} folders deep`);
  }
  const images = placed.filter(({ parts }) => isImageFile(parts[parts.length - 1]));
  return { name: underOneFolder ? top : baseName, images: images.map(({ entry, parts }) => ({ entry, path: parts.join('/') })) };
}

/** The uncompressed total, checked against maxZipBytes before anything is unpacked. */
export function checkZipSize(zipName: string, uncompressedBytes: number, limit = maxZipBytes): void {
  if (uncompressedBytes > limit) {
    const size = (bytes: number): string => (bytes >= 1024 ** 3 ? `${(bytes / 1024 ** 3).toFixed(1)} GiB` : `${Math.ceil(bytes / 1024 ** 2)} MiB`);
    throw new ZipFolderError(zipName, `unpacks to ${size(uncompressedBytes)}, more than the ${size(limit)} a ZIP may hold here; unpack it and open the folder`);
  }
}

/** A ZIP's layout from its directory alone (nothing inflated): its size checked against `limit`, then zipFolderLayout. */
export function readZipLayout(zipName: string, bytes: Uint8Array, limit = maxZipBytes): ZipFolderLayout {
  const names: string[] = [];
  let total = 0;
  unzipOrExplain(zipName, bytes, (entry) => {
    names.push(entry.name);
    total += entry.originalSize;
    return false;
  });
  checkZipSize(zipName, total, limit);
  return zipFolderLayout(zipName, names);
}

/** The layout's images, inflated, each with its path in the folder. */
export function unzipImages(zipName: string, bytes: Uint8Array, layout: ZipFolderLayout): { path: string; data: Uint8Array }[] {
  const wanted = new Set(layout.images.map((place) => place.entry));
  const unpacked = unzipOrExplain(zipName, bytes, (entry) => wanted.has(entry.name));
  return layout.images.map((place) => ({ path: place.path, data: unpacked[place.entry] }));
}

function unzipOrExplain(zipName: string, bytes: Uint8Array, keep: (entry: { name: string; originalSize: number }) => boolean): Record<string, Uint8Array> {
  try {
    return unzipSync(bytes, { filter: keep });
  } catch (error) {
    throw new ZipFolderError(zipName, `is not a ZIP that can be read (${error instanceof Error ? error.message : String(error)})`);
  }
}
