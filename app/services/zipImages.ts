// A ZIP of an image folder, read on the engine's machine (`--data photos.zip`, serve's `{ kind: 'path' }`): the
// data source stays the ZIP, and reading it unpacks its images once into a cache folder named by the ZIP's
// contents (os.tmpdir()/nnstudio-zips/<sha256>), so runs, evaluation and a reopened project read the same
// folder, and a changed ZIP is a new folder. Which entries count is app/core/data/zipFolder.ts's rule, the
// same the browser applies to a dropped ZIP.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { unzipSync } from 'fflate';
import { DataError } from '../core/data/errors';
import { checkZipSize, zipFolderLayout, ZipFolderError, type ZipFolderLayout } from '../core/data/zipFolder';

const zipMagic = [0x50, 0x4b];  // "PK": local file header or end of central directory (an empty ZIP)

/** A ZIP by its name, or by its first bytes. */
export function isZipFile(file: string): boolean {
  if (/\.zip$/i.test(file)) return true;
  try {
    const fd = fs.openSync(file, 'r');
    try {
      const head = Buffer.alloc(4);
      return fs.readSync(fd, head, 0, 4, 0) === 4 && head[0] === zipMagic[0] && head[1] === zipMagic[1] &&
        (head[2] === 3 || head[2] === 5) && (head[3] === 4 || head[3] === 6);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return false;
  }
}

/** The folder a source's path names: the path itself, or a ZIP's images unpacked (once per distinct ZIP). */
export function imageFolderRoot(sourcePath: string): string {
  if (!fs.statSync(sourcePath).isFile() || !isZipFile(sourcePath)) return sourcePath;
  return unpackZipFolder(sourcePath);
}

export function zipCacheFolder(): string {
  return path.join(os.tmpdir(), 'nnstudio-zips');
}

function unpackZipFolder(zipPath: string): string {
  const bytes = fs.readFileSync(zipPath);
  const digest = createHash('sha256').update(bytes).digest('hex').slice(0, 24);
  const layout = layoutOf(zipPath, bytes);
  const target = path.join(zipCacheFolder(), digest, layout.name);
  if (fs.existsSync(target)) return target;
  // unpacked beside the target first, then renamed: a folder under the final name is always whole
  const partial = `${path.dirname(target)}.partial-${process.pid}`;
  fs.rmSync(partial, { recursive: true, force: true });
  const wanted = new Map(layout.images.map((place) => [place.entry, place.path]));
  const files = unzipOrExplain(zipPath, bytes, (entry) => wanted.has(entry));
  for (const [entry, data] of Object.entries(files)) {
    const file = path.join(partial, layout.name, ...wanted.get(entry)!.split('/'));
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, data);
  }
  fs.mkdirSync(path.join(partial, layout.name), { recursive: true });
  fs.mkdirSync(zipCacheFolder(), { recursive: true });
  try {
    fs.renameSync(partial, path.dirname(target));
  } catch (error) {
    fs.rmSync(partial, { recursive: true, force: true });
    if (!fs.existsSync(target)) throw error;  // else another process unpacked the same ZIP first
  }
  return target;
}

/** The entries' names and sizes without inflating anything, then the layout (and its size check). */
function layoutOf(zipPath: string, bytes: Uint8Array): ZipFolderLayout {
  const names: string[] = [];
  let total = 0;
  unzipOrExplain(zipPath, bytes, (entry, originalSize) => {
    names.push(entry);
    total += originalSize;
    return false;
  });
  try {
    checkZipSize(zipPath, total);
    return zipFolderLayout(zipPath, names);
  } catch (error) {
    throw error instanceof ZipFolderError ? new DataError(zipPath, error.what) : error;
  }
}

function unzipOrExplain(zipPath: string, bytes: Uint8Array, keep: (entry: string, originalSize: number) => boolean): Record<string, Uint8Array> {
  try {
    return unzipSync(bytes, { filter: (file) => keep(file.name, file.originalSize) });
  } catch (error) {
    if (error instanceof DataError) throw error;
    throw new DataError(zipPath, `is not a ZIP that can be read (${error instanceof Error ? error.message : String(error)})`);
  }
}
