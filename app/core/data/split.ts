// Seeded, stratified train / validation / test splits (DESIGN §4). The PRNG is mulberry32: 32-bit integer
// arithmetic only, so a seed gives the same split on every machine and in every language that ports it.
import type { Dataset } from './dataset';
import { featureSize } from './dataset';

/** mulberry32: a function returning uniform floats in [0,1) for a 32-bit seed. */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Fisher–Yates shuffle in place with the given generator. */
export function shuffleInPlace(values: Int32Array | number[], random: () => number): void {
  for (let i = values.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const held = values[i];
    values[i] = values[j];
    values[j] = held;
  }
}

export interface SplitFractions {
  /** Fraction for validation, in [0,1). */
  validation: number;
  /** Fraction for test, in [0,1). */
  test: number;
  /** Optional; when given, the three must sum to 1. The training split takes the rest. */
  train?: number;
}

/** Example indices of each split, ascending. */
export interface SplitIndices {
  train: Int32Array;
  validation: Int32Array;
  test: Int32Array;
}

/**
 * Splits examples by class so that each split holds about the same class proportions.
 * Per split, the total is round(count * fraction); it is shared among classes in proportion to their size
 * (largest remainders, ties to the smaller class index). A class keeps at least one example for training
 * whenever the training fraction is above 0, so a class of one example goes to training. Fraction 0 gives
 * an empty split. Labels < 0 (unlabeled) form one group of their own.
 */
export function stratifiedSplit(labels: Int32Array, fractions: SplitFractions, seed: number): SplitIndices {
  const { validation, test } = fractions;
  for (const [name, value] of [['validation', validation], ['test', test]] as const) {
    if (!(value >= 0 && value < 1)) throw new Error(`${name} fraction must be in [0, 1), got ${value}`);
  }
  if (validation + test >= 1) throw new Error(`validation (${validation}) and test (${test}) fractions leave nothing for training`);
  if (fractions.train !== undefined && Math.abs(fractions.train + validation + test - 1) > 1e-9) {
    throw new Error(`train, validation and test fractions must sum to 1, got ${fractions.train + validation + test}`);
  }
  if (!Number.isInteger(seed)) throw new Error(`seed must be an integer, got ${seed}`);

  // Group example indices by class (unlabeled examples last).
  let classCount = 0;
  for (let i = 0; i < labels.length; i++) if (labels[i] + 1 > classCount) classCount = labels[i] + 1;
  const groupOf = (label: number) => (label < 0 ? classCount : label);
  const sizes = new Int32Array(classCount + 1);
  for (let i = 0; i < labels.length; i++) sizes[groupOf(labels[i])]++;
  const groups = Array.from(sizes, (size) => new Int32Array(size));
  const filled = new Int32Array(classCount + 1);
  for (let i = 0; i < labels.length; i++) {
    const group = groupOf(labels[i]);
    groups[group][filled[group]++] = i;
  }

  // Test first, then validation, each apportioned over the classes.
  const keep = sizes.map((size) => (size > 0 ? 1 : 0)); // kept for training
  const testCounts = apportion(sizes, test, (g) => sizes[g] - keep[g]);
  const validationCounts = apportion(sizes, validation, (g) => sizes[g] - keep[g] - testCounts[g]);

  const random = mulberry32(seed);
  const trainOut: number[] = [];
  const validationOut: number[] = [];
  const testOut: number[] = [];
  groups.forEach((members, group) => {
    shuffleInPlace(members, random);
    const testEnd = testCounts[group];
    const validationEnd = testEnd + validationCounts[group];
    for (let k = 0; k < members.length; k++) {
      (k < testEnd ? testOut : k < validationEnd ? validationOut : trainOut).push(members[k]);
    }
  });
  const sorted = (values: number[]) => Int32Array.from(values).sort();
  return { train: sorted(trainOut), validation: sorted(validationOut), test: sorted(testOut) };
}

/** Shares round(total * fraction) among groups in proportion to their sizes, within each group's capacity. */
function apportion(sizes: Int32Array, fraction: number, capacity: (group: number) => number): Int32Array {
  const counts = new Int32Array(sizes.length);
  if (fraction === 0) return counts;
  let total = 0;
  for (const size of sizes) total += size;
  let remaining = Math.round(total * fraction);
  const remainders: { group: number; part: number }[] = [];
  for (let group = 0; group < sizes.length; group++) {
    const ideal = sizes[group] * fraction;
    counts[group] = Math.min(Math.floor(ideal), Math.max(0, capacity(group)));
    remaining -= counts[group];
    remainders.push({ group, part: ideal - Math.floor(ideal) });
  }
  remainders.sort((a, b) => b.part - a.part || a.group - b.group);
  // Round-robin over the largest remainders until the total is met or nobody has room.
  while (remaining > 0) {
    let gave = false;
    for (const { group } of remainders) {
      if (remaining === 0) break;
      if (counts[group] < capacity(group)) {
        counts[group]++;
        remaining--;
        gave = true;
      }
    }
    if (!gave) break;
  }
  return counts;
}

/** The examples at `indices` (in that order) as a new dataset with copied buffers. */
export function subset(dataset: Dataset, indices: ArrayLike<number>): Dataset {
  const width = featureSize(dataset.featureShape);
  const count = indices.length;
  const features = new Float32Array(count * width);
  const labels = new Int32Array(count);
  const sourceTargets = dataset.targets;
  const targetWidth = sourceTargets === undefined || dataset.count === 0 ? 0 : sourceTargets.length / dataset.count;
  const targets = sourceTargets === undefined ? undefined : new Float32Array(count * targetWidth);
  for (let k = 0; k < count; k++) {
    const index = indices[k];
    if (!(index >= 0 && index < dataset.count)) throw new Error(`${dataset.source}: example index ${index} outside 0..${dataset.count - 1}`);
    features.set(dataset.features.subarray(index * width, (index + 1) * width), k * width);
    labels[k] = dataset.labels[index];
    if (targets !== undefined) targets.set(sourceTargets!.subarray(index * targetWidth, (index + 1) * targetWidth), k * targetWidth);
  }
  const names = dataset.exampleNames;
  const exampleNames = names === undefined ? undefined : Array.from(indices, (index) => names[index]);
  return { ...dataset, features, labels, count, ...(targets !== undefined ? { targets } : {}), ...(exampleNames ? { exampleNames } : {}) };
}

/**
 * What a split is stratified by: the class for classification; for regression the quantile bin of the
 * first target (up to 10 bins of at least 5 rows), so that every split spans the range of the target.
 */
export function stratificationKeys(dataset: Dataset): Int32Array {
  const targets = dataset.targets;
  if (dataset.task !== 'regression' || targets === undefined || dataset.count === 0) return dataset.labels;
  const width = targets.length / dataset.count;
  const bins = Math.max(1, Math.min(10, Math.floor(dataset.count / 5)));
  const order = Array.from({ length: dataset.count }, (_, i) => i);
  order.sort((a, b) => targets[a * width] - targets[b * width] || a - b);
  const keys = new Int32Array(dataset.count);
  order.forEach((row, rank) => { keys[row] = Math.floor((rank * bins) / dataset.count); });
  return keys;
}

/** Splits a dataset into train / validation / test datasets (see stratifiedSplit). */
export function splitDataset(dataset: Dataset, fractions: SplitFractions, seed: number) {
  const indices = stratifiedSplit(stratificationKeys(dataset), fractions, seed);
  return {
    indices,
    train: subset(dataset, indices.train),
    validation: subset(dataset, indices.validation),
    test: subset(dataset, indices.test),
  };
}
