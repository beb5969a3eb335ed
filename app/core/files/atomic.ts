// Atomic file writes: a failed save must leave the previous file intact. Write a temporary file in the
// same folder, flush it to disk, then rename it over the target (a rename within one folder is atomic).
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';

/** Says why a file operation failed, in words a user understands. */
export function describeFsError(error: unknown, filePath: string): string {
  const code = (error as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOENT':
      return `folder ${path.dirname(path.resolve(filePath))} does not exist`;
    case 'EACCES':
    case 'EPERM':
      return `permission denied in ${path.dirname(path.resolve(filePath))}`;
    case 'EROFS':
      return 'read-only file system';
    case 'ENOSPC':
      return 'no space left on the device';
    case 'EDQUOT':
      return 'disk quota exceeded';
    case 'EFBIG':
      return 'the file is larger than this system allows';
    case 'EISDIR':
      return `${filePath} is a folder`;
    case 'ENOTDIR':
      return `a part of ${filePath} is not a folder`;
    default:
      return (error as Error).message;
  }
}

export class FileWriteError extends Error {
  constructor(readonly file: string, readonly reason: string) {
    super(`cannot write ${file}: ${reason}`);
    this.name = 'FileWriteError';
  }
}

/**
 * Writes `data` to `filePath` atomically; on failure removes the temporary file, leaves any previous file
 * untouched and throws a FileWriteError naming the path.
 */
export async function writeFileAtomic(filePath: string, data: string | Uint8Array): Promise<void> {
  const temporary = `${filePath}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;
  let handle: FileHandle | undefined;
  try {
    handle = await fsp.open(temporary, 'wx', 0o644);
    await handle.writeFile(data);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await fsp.rename(temporary, filePath);
  } catch (error) {
    // Cleaning up after the failure reported below: a second failure here would only hide the first.
    await handle?.close().catch(() => undefined);
    await fsp.rm(temporary, { force: true }).catch(() => undefined);
    throw new FileWriteError(filePath, describeFsError(error, filePath));
  }
  // Make the rename itself durable; not every platform can open a folder, so this is best effort.
  try {
    const folder = await fsp.open(path.dirname(path.resolve(filePath)), 'r');
    await folder.sync().finally(() => folder.close());
  } catch {
    // ignored: the data is already flushed and renamed
  }
}
