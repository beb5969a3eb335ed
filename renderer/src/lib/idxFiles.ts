// Which of the files a user dropped is the IDX images file and which the labels file: by the magic number
// (00 00 08 03 images, 00 00 08 01 labels; gzipped files are read through DecompressionStream), else by name.
export type IdxRole = 'images' | 'labels';

async function firstBytes(file: Blob, count: number): Promise<Uint8Array> {
  const head = new Uint8Array(await file.slice(0, 2).arrayBuffer());
  if (head[0] !== 0x1f || head[1] !== 0x8b) return new Uint8Array(await file.slice(0, count).arrayBuffer());
  // gzip: the first decompressed chunk holds the header.
  const reader = file.stream().pipeThrough(new DecompressionStream('gzip')).getReader();
  try {
    const { value } = await reader.read();
    return value ? value.subarray(0, count) : new Uint8Array();
  } finally {
    void reader.cancel().catch(() => {});
  }
}

function roleByName(name: string): IdxRole | undefined {
  if (/labels?|idx1/i.test(name)) return 'labels';
  if (/images?|idx3/i.test(name)) return 'images';
  return undefined;
}

/** 'images' or 'labels' for an IDX file of unsigned bytes; undefined when neither its bytes nor its name tell. */
export async function idxRole(file: File): Promise<IdxRole | undefined> {
  try {
    const bytes = await firstBytes(file, 4);
    if (bytes.length === 4 && bytes[0] === 0 && bytes[1] === 0 && bytes[2] === 0x08) {
      if (bytes[3] === 3) return 'images';
      if (bytes[3] === 1) return 'labels';
    }
  } catch {
    // not gzip after all, or unreadable: the name may still tell
  }
  return roleByName(file.name);
}

/** Sorts dropped files into the pair; a file that tells nothing fills whichever place is still free. */
export async function sortIdxFiles(files: readonly File[]): Promise<Partial<Record<IdxRole, File>>> {
  const pair: Partial<Record<IdxRole, File>> = {};
  const unknown: File[] = [];
  for (const file of files) {
    const role = await idxRole(file);
    if (role && !pair[role]) pair[role] = file;
    else unknown.push(file);
  }
  for (const file of unknown) {
    if (!pair.images) pair.images = file;
    else if (!pair.labels) pair.labels = file;
  }
  return pair;
}
