// A ZIP of an image folder, read on the engine's machine (`--data photos.zip`, serve's `{ kind: 'path' }`): the
// data source stays the ZIP, and reading it unpacks its images once into a cache folder named by the ZIP's
// contents (os.tmpdir()/nnstudio-zips/<sha256>), so runs, evaluation and a reopened project read the same
// folder, and a changed ZIP is a new folder. Which entries count is app/core/data/zipFolder.ts's rule, the
// same the browser applies to a dropped ZIP.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DataError } from '../core/data/errors';
import { readZipLayout, unzipImages, ZipFolderError } from '../core/data/zipFolder';

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

// A ZIP unpacked in this process, by path, size and time: reading it again (a prediction scans it, then loads
// it) neither hashes nor lists it again.
const unpacked = new Map<string, string>();

/** The folder a source's path names: the path itself, or a ZIP's images unpacked (once per distinct ZIP). */
export function imageFolderRoot(sourcePath: string): string {
  const stat = fs.statSync(sourcePath);
  if (!stat.isFile() || !isZipFile(sourcePath)) return sourcePath;
  const key = `${path.resolve(sourcePath)}\0${stat.size}\0${stat.mtimeMs}`;
  const known = unpacked.get(key);
  if (known && fs.existsSync(known)) return known;
  const folder = unpackZipFolder(sourcePath);
  unpacked.set(key, folder);
  return folder;
}

const cacheFolder = (): string => path.join(os.tmpdir(), 'nnstudio-zips');

function unpackZipFolder(zipPath: string): string {
  const bytes = fs.readFileSync(zipPath);
  const digest = createHash('sha256').update(bytes).digest('hex').slice(0, 24);
  const layout = asDataError(zipPath, () => readZipLayout(zipPath, bytes));
  const target = path.join(cacheFolder(), digest, layout.name);
  if (fs.existsSync(target)) return target;
  // unpacked beside the target first, then renamed: a folder under the final name is always whole
  const partial = `${path.dirname(target)}.partial-${process.pid}`;
  fs.rmSync(partial, { recursive: true, force: true });
  for (const image of asDataError(zipPath, () => unzipImages(zipPath, bytes, layout))) {
    const file = path.join(partial, layout.name, ...image.path.split('/'));
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, image.data);
  }
  fs.mkdirSync(path.join(partial, layout.name), { recursive: true });
  fs.mkdirSync(cacheFolder(), { recursive: true });
  try {
    fs.renameSync(partial, path.dirname(target));
  } catch (error) {
    fs.rmSync(partial, { recursive: true, force: true });
    if (!fs.existsSync(target)) throw error;  // else another process unpacked the same ZIP first
  }
  return target;
}

/** The CLI's and the API's errors about data files are DataErrors (the ZIP named as given). */
function asDataError<T>(zipPath: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    throw error instanceof ZipFolderError ? new DataError(zipPath, error.what) : error;
  }
}
