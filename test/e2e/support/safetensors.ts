// Reads a safetensors file's header: 8 bytes of little-endian header length, then that much JSON.
import * as fs from 'node:fs';

export interface SafetensorsHeader {
  headerLength: number;
  tensors: Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  metadata: Record<string, string>;
}

export function readSafetensorsHeader(file: string): SafetensorsHeader {
  const bytes = fs.readFileSync(file);
  if (bytes.length < 8) throw new Error(`${file}: ${bytes.length} bytes, shorter than the 8-byte header length`);
  const length = bytes.readBigUInt64LE(0);
  if (length <= 0n || length > BigInt(bytes.length - 8)) throw new Error(`${file}: header length ${length} does not fit in ${bytes.length} bytes`);
  const headerLength = Number(length);
  const json = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8')) as Record<string, unknown>;
  const { __metadata__: metadata = {}, ...tensors } = json;
  return { headerLength, tensors: tensors as SafetensorsHeader['tensors'], metadata: metadata as Record<string, string> };
}
