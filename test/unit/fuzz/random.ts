// A small seeded generator (mulberry32): every fuzz case is rebuilt from (seed, reader, case index) alone,
// so a failure printed as "seed=1 case=123" replays exactly.

export class Random {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** An integer in [low, high]. */
  range(low: number, high: number): number {
    return low + this.int(high - low + 1);
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }
}

/** FNV-1a of a text, for mixing a reader's name into its cases' seeds. */
function hashText(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/** The generator of one case: independent of every other case, so cases can run in any order. */
export function caseRandom(seed: number, reader: string, index: number): Random {
  let mixed = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ hashText(reader);
  mixed = Math.imul(mixed ^ (mixed >>> 13), 0xc2b2ae35) ^ Math.imul(index + 1, 0x27d4eb2f);
  mixed ^= mixed >>> 16;
  return new Random(mixed >>> 0);
}
