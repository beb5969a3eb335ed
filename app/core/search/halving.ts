// Successive halving (Hyperband's inner loop, synchronous so that a seed gives the same search): every
// trial trains a few epochs, the best 1/eta of them train eta times longer, and so on up to the most
// epochs. Each rung retrains from the start, so that a schedule spans the rung's whole run.

export interface Rung {
  /** Epochs each trial of this rung trains. */
  epochs: number;
  /** Trials that train at this rung. */
  trials: number;
}

/** The rungs for `trials` trials from `minEpochs` up to `maxEpochs`, keeping the best 1/eta each time. */
export function halvingPlan(trials: number, minEpochs: number, maxEpochs: number, eta: number): Rung[] {
  if (!(Number.isInteger(trials) && trials >= 1)) throw new Error(`trials must be a whole number of at least 1, got ${trials}`);
  if (!(Number.isInteger(minEpochs) && minEpochs >= 1 && Number.isInteger(maxEpochs) && maxEpochs >= minEpochs)) {
    throw new Error(`epochs per trial must be whole numbers with 1 <= min <= max, got ${minEpochs} and ${maxEpochs}`);
  }
  if (!(Number.isInteger(eta) && eta >= 2)) throw new Error(`eta (the halving factor) must be a whole number of at least 2, got ${eta}`);
  const rungs: Rung[] = [{ epochs: minEpochs, trials }];
  for (;;) {
    const last = rungs[rungs.length - 1];
    if (last.epochs >= maxEpochs || last.trials <= 1) return rungs;
    rungs.push({ epochs: Math.min(maxEpochs, last.epochs * eta), trials: Math.max(1, Math.floor(last.trials / eta)) });
  }
}

/** The epochs a plan trains in all (its cost in trial-epochs). */
export function plannedEpochs(rungs: readonly Rung[]): number {
  return rungs.reduce((sum, rung) => sum + rung.epochs * rung.trials, 0);
}

/** A trial's standing at a rung: the higher the better; ties go to the lower validation loss, then the earlier trial. */
export interface Standing {
  trial: number;
  score: number;
  validationLoss: number;
}

/** The `keep` best standings, best first. */
export function promote<T extends Standing>(standings: readonly T[], keep: number): T[] {
  return [...standings].sort(compareStandings).slice(0, keep);
}

export function compareStandings(a: Standing, b: Standing): number {
  return b.score - a.score || a.validationLoss - b.validationLoss || a.trial - b.trial;
}
