// A full disk, simulated: files whose path matches get half their bytes written, then the write fails
// with ENOSPC, as a real full disk does. It wraps fs.promises.open, which every atomic save goes through
// (app/core/files/atomic.ts); /dev/full cannot stand in, since an atomic save writes a temporary file
// next to its target.
import * as fs from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { mock } from 'node:test';

export function noSpaceError(): NodeJS.ErrnoException {
  return Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
}

/** Until restore() is called, writes to files for which `affected(path)` is true fail with ENOSPC. */
export function fillDisk(affected: (file: string) => boolean): { restore(): void; failures: string[] } {
  const failures: string[] = [];
  const realOpen = fs.promises.open.bind(fs.promises);
  const opened = mock.method(fs.promises, 'open', async (file: fs.PathLike, flags?: string | number, mode?: fs.Mode) => {
    const handle = await realOpen(file, flags, mode);
    const name = String(file);
    if (!affected(name) || !/[wa]/.test(String(flags ?? 'r'))) return handle;
    return new Proxy(handle, {
      get(target: FileHandle, key: string | symbol) {
        if (key === 'writeFile' || key === 'write') {
          return async (data: string | Uint8Array) => {
            const bytes = typeof data === 'string' ? Buffer.from(data) : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
            await target.write(bytes.subarray(0, bytes.length >> 1));
            failures.push(name);
            throw noSpaceError();
          };
        }
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  });
  return { restore: () => opened.mock.restore(), failures };
}
