// A dropped or chosen ZIP of an image folder as the folder's files, unpacked in the page (fflate) and sent
// as the same folder upload as a dropped folder: which entries count and their paths are
// app/core/data/zipFolder.ts's rule, the one the CLI applies to `--data photos.zip`.
import { readZipLayout, unzipImages } from '../../../app/core/data/zipFolder';
import type { PickedFolder } from './folderFiles';

/** A folder upload carries at most 256 MiB of base64: 192 MiB of files. */
const maxUnpackedBytes = 192 * 1024 * 1024;

export function isZip(file: File): boolean {
  return /\.zip$/i.test(file.name) || file.type === 'application/zip' || file.type === 'application/x-zip-compressed';
}

/** Throws an Error whose message starts with the ZIP's name (damaged, unsafe paths, too large, no files). */
export async function folderFromZip(zip: File): Promise<PickedFolder> {
  const bytes = new Uint8Array(await zip.arrayBuffer());
  const layout = readZipLayout(zip.name, bytes, maxUnpackedBytes);
  const files = unzipImages(zip.name, bytes, layout).map(({ path, data }) => ({
    path,
    file: new File([data as Uint8Array<ArrayBuffer>], path.slice(path.lastIndexOf('/') + 1)),
  }));
  return { name: layout.name, files };
}
