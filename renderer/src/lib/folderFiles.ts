// A dropped or chosen folder as the files the API's folder upload takes: each file with its path inside the
// folder ("cats/001.jpg"). The browser never tells a folder's path on disk, so its files travel instead
// (docs/DATA.md "Image folders"); a ZIP of a folder becomes the same files in zipFolder.ts. Hidden names are
// skipped by the server's rule (app/core/data/imageFiles.ts).
import { isHiddenName as hidden } from '../../../app/core/data/imageFiles';

export interface FolderFile {
  /** "/"-separated, relative to the folder. */
  path: string;
  file: File;
}

export interface PickedFolder {
  name: string;
  files: FolderFile[];
}

/** From `<input type="file" webkitdirectory>`: each file's webkitRelativePath starts with the folder's name. */
export function folderFromInput(files: readonly File[]): PickedFolder | undefined {
  const withPaths = files.map((file) => ({ parts: (file.webkitRelativePath || file.name).split('/'), file }));
  if (withPaths.length === 0) return undefined;
  const name = withPaths[0].parts.length > 1 ? withPaths[0].parts[0] : 'folder';
  const kept = withPaths.filter(({ parts }) => !parts.some(hidden));
  return { name, files: kept.map(({ parts, file }) => ({ path: parts.slice(parts.length > 1 ? 1 : 0).join('/'), file })) };
}

/** From a drop: the first folder among the dropped items, walked through (FileSystemEntry API). */
export async function folderFromDrop(items: DataTransferItemList): Promise<PickedFolder | undefined> {
  const entries = [...items].map((item) => item.webkitGetAsEntry()).filter((entry): entry is FileSystemEntry => entry !== null);
  const folder = entries.find((entry) => entry.isDirectory) as FileSystemDirectoryEntry | undefined;
  if (!folder) return undefined;
  const files: FolderFile[] = [];
  await walk(folder, '', files);
  return { name: folder.name, files };
}

async function walk(folder: FileSystemDirectoryEntry, prefix: string, out: FolderFile[]): Promise<void> {
  for (const entry of await readAll(folder.createReader())) {
    if (hidden(entry.name)) continue;
    const inner = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory) await walk(entry as FileSystemDirectoryEntry, inner, out);
    else out.push({ path: inner, file: await new Promise<File>((resolve, reject) => (entry as FileSystemFileEntry).file(resolve, reject)) });
  }
}

/** readEntries answers in batches (100 in Chromium) until an empty one. */
async function readAll(reader: FileSystemDirectoryReader): Promise<FileSystemEntry[]> {
  const all: FileSystemEntry[] = [];
  for (;;) {
    const batch = await new Promise<FileSystemEntry[]>((resolve, reject) => reader.readEntries(resolve, reject));
    if (batch.length === 0) return all;
    all.push(...batch);
  }
}
