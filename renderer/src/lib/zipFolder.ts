// A dropped or chosen ZIP of an image folder as the folder's files, unpacked in the page (fflate) and sent
// as the same folder upload as a dropped folder: which entries count and their paths are
// app/core/data/zipFolder.ts's rule, the one the CLI applies to `--data photos.zip`.
import { unzipSync } from 'fflate';
import { checkZipSize, zipFolderLayout } from '../../../app/core/data/zipFolder';
import type { PickedFolder } from './folderFiles';

/** A folder upload carries at most 256 MiB of base64: 192 MiB of files. */
const maxUnpackedBytes = 192 * 1024 * 1024;

export function isZip(file: File): boolean {
  return /\.zip$/i.test(file.name) || file.type === 'application/zip' || file.type === 'application/x-zip-compressed';
}

/** Throws an Error whose message starts with the ZIP's name (damaged, unsafe paths, too large, no files). */
export async function folderFromZip(zip: File): Promise<PickedFolder> {
  const bytes = new Uint8Array(await zip.arrayBuffer());
  const names: string[] = [];
  let total = 0;
  readable(zip, () => unzipSync(bytes, { filter: (entry) => (names.push(entry.name), (total += entry.originalSize), false) }));
  checkZipSize(zip.name, total, maxUnpackedBytes);
  const layout = zipFolderLayout(zip.name, names);
  const wanted = new Set(layout.images.map((place) => place.entry));
  const unpacked = readable(zip, () => unzipSync(bytes, { filter: (entry) => wanted.has(entry.name) }));
  const files = layout.images.map((place) => ({
    path: place.path,
    file: new File([unpacked[place.entry] as Uint8Array<ArrayBuffer>], place.path.slice(place.path.lastIndexOf('/') + 1)),
  }));
  return { name: layout.name, files };
}

function readable<T>(zip: File, unzip: () => T): T {
  try {
    return unzip();
  } catch (error) {
    throw new Error(`${zip.name}: is not a ZIP that can be read (${error instanceof Error ? error.message : String(error)})`);
  }
}
