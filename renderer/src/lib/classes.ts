// The classes a list has room for: the largest by example count (ties: the file's order), and what is left.

export interface ShownClasses {
  classes: { index: number; label: string; count: number }[];
  /** Classes left out, and their examples together. */
  hidden: number;
  hiddenExamples: number;
}

/** All classes in their own order when they fit; otherwise the `limit` largest, largest first. */
export function largestClasses(labels: readonly string[], counts: readonly number[], limit: number): ShownClasses {
  const all = labels.map((label, index) => ({ index, label, count: counts[index] ?? 0 }));
  if (all.length <= limit) return { classes: all, hidden: 0, hiddenExamples: 0 };
  const sorted = [...all].sort((a, b) => b.count - a.count || a.index - b.index);
  const rest = sorted.slice(limit);
  return { classes: sorted.slice(0, limit), hidden: rest.length, hiddenExamples: rest.reduce((sum, entry) => sum + entry.count, 0) };
}
