// Which GPUs a run trains on (issue 17): `--gpus all`, `--gpus 2` (the first two), `--gpus 0,2` (those), and
// the same in the API. Parsed without knowing the machine, then resolved against its CUDA devices, so a
// choice that does not fit names what the machine has. Several GPUs train data-parallel (docs/ARCHITECTURE.md
// "Several GPUs"); the engine trains on the first alone, saying why, when NCCL is missing.

export type GpuChoice = { kind: 'all' } | { kind: 'count'; count: number } | { kind: 'list'; gpus: number[] };

export function parseGpuChoice(text: string): GpuChoice {
  const trimmed = text.trim().toLowerCase();
  if (trimmed === 'all') return { kind: 'all' };
  if (/^\d+$/.test(trimmed)) {
    const count = Number(trimmed);
    if (count < 1) throw new Error(`--gpus takes all, a count from 1, or GPU numbers such as 0,1; got "${text}"`);
    return { kind: 'count', count };
  }
  if (/^\d+(\s*,\s*\d+)+$/.test(trimmed)) {
    const gpus = trimmed.split(',').map((part) => Number(part.trim()));
    const repeated = gpus.find((gpu, i) => gpus.indexOf(gpu) !== i);
    if (repeated !== undefined) throw new Error(`--gpus lists GPU ${repeated} twice`);
    return { kind: 'list', gpus };
  }
  throw new Error(`--gpus takes all, a count (2: the first two) or GPU numbers such as 0,1; got "${text}"`);
}

/** The GPU indices to train on, given the machine's CUDA device indices (in order). */
export function resolveGpus(choice: GpuChoice, available: readonly number[]): number[] {
  const has = `this machine has ${available.length === 1 ? '1 GPU' : `${available.length} GPUs`}${available.length ? ` (${available.join(', ')})` : ''}`;
  if (available.length === 0) throw new Error(`--gpus needs a GPU; ${has}`);
  switch (choice.kind) {
    case 'all':
      return [...available];
    case 'count':
      if (choice.count > available.length) throw new Error(`--gpus ${choice.count}: ${has}`);
      return available.slice(0, choice.count);
    case 'list': {
      const missing = choice.gpus.find((gpu) => !available.includes(gpu));
      if (missing !== undefined) throw new Error(`--gpus: there is no GPU ${missing}; ${has}`);
      return [...choice.gpus];
    }
  }
}
