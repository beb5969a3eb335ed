// CSV files as scikit-learn, pandas and data portals ship them: gzip-compressed (.csv.gz). They are read
// through zlib, found by their first bytes (1f 8b), not by their name, so a renamed file reads too.
import * as fs from 'node:fs';
import { pipeline, type Readable } from 'node:stream';
import * as zlib from 'node:zlib';
import { DataError, fileError } from './errors';
import { damagedGzipProblem, isGzip } from './textEncoding';

/** Whether the file starts with gzip's magic bytes. */
export async function isGzipFile(file: string): Promise<boolean> {
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(file, 'r');
  } catch (error) {
    throw fileError(file, error);
  }
  try {
    const magic = Buffer.alloc(2);
    const { bytesRead } = await handle.read(magic, 0, 2, 0);
    return isGzip(magic.subarray(0, bytesRead));
  } finally {
    await handle.close();
  }
}

/** The file's bytes as a stream, decompressed when `gzip`; destroying it closes the file. */
export function openDataStream(file: string, gzip: boolean, highWaterMark: number): Readable {
  const source = fs.createReadStream(file, { highWaterMark });
  if (!gzip) return source;
  // pipeline: an error or a destroy on either side ends both (the file is never left open)
  return pipeline(source, zlib.createGunzip({ chunkSize: highWaterMark }), () => {});
}

/** A read error as the user should see it: a damaged gzip file says so, anything else is fileError's. */
export function dataStreamError(file: string, error: unknown): DataError {
  if (error instanceof DataError) return error;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === 'string' && code.startsWith('Z_')) {
    return new DataError(file, damagedGzipProblem((error as Error).message));
  }
  return fileError(file, error);
}

/** The file's first `byteCount` bytes, decompressed first when it is gzip; `whole` when that is all of it. */
export async function readHeadBytes(file: string, byteCount: number): Promise<{ bytes: Buffer; whole: boolean; gzip: boolean }> {
  const gzip = await isGzipFile(file);
  const stream = openDataStream(file, gzip, Math.min(byteCount, 64 * 1024));
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      total += chunk.length;
      if (total >= byteCount) return { bytes: Buffer.concat(chunks).subarray(0, byteCount), whole: false, gzip };
    }
  } catch (error) {
    throw dataStreamError(file, error);
  } finally {
    stream.destroy();
  }
  return { bytes: Buffer.concat(chunks), whole: true, gzip };
}
