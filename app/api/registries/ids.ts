// The session's ids: `dataset-1`, `run-1`, `model-1`, `evaluation-1`, `search-1`, counted per kind.
export type IdKind = 'dataset' | 'run' | 'model' | 'evaluation' | 'search';

export class IdSequence {
  private readonly counts = new Map<IdKind, number>();

  next(kind: IdKind): string {
    const n = (this.counts.get(kind) ?? 0) + 1;
    this.counts.set(kind, n);
    return `${kind}-${n}`;
  }
}
