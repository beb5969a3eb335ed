// Successive halving (Hyperband's inner loop, synchronous so that a seed gives the same search): every
// trial trains a little, the best 1/eta of them train eta times longer, and so on up to the most epochs.
// Each rung retrains from the start, so that a schedule spans the rung's whole run. A rung below one
// epoch trains one pass over that share of the training split: many trials cost little where most of
// them are only screened.

export interface Rung {
  /** Epochs each trial of this rung trains; below 1, one pass over this share of the training split. */
  epochs: number;
  /** Trials that train at this rung. */
  trials: number;
}

/**
 * The rungs for `trials` trials from `minEpochs` up to `maxEpochs`, keeping the best 1/eta each time: as many
 * rungs as it takes the trials to dwindle to one or eta-fold epochs to reach the most, their epochs spaced
 * evenly on a log scale from the first to `maxEpochs` (eta-fold when the ends allow it), so that the last rung
 * always trains the most epochs.
 */
export function halvingPlan(trials: number, minEpochs: number, maxEpochs: number, eta: number): Rung[] {
  if (!(Number.isInteger(trials) && trials >= 1)) throw new Error(`trials must be a whole number of at least 1, got ${trials}`);
  const wholeOrShare = (epochs: number) => epochs > 0 && (epochs < 1 || Number.isInteger(epochs));
  if (!(wholeOrShare(minEpochs) && Number.isInteger(maxEpochs) && maxEpochs >= 1 && maxEpochs >= minEpochs)) {
    throw new Error(`epochs per trial must be whole numbers (the first rung's may be a share below 1) with 0 < min <= max, got ${minEpochs} and ${maxEpochs}`);
  }
  if (!(Number.isInteger(eta) && eta >= 2)) throw new Error(`eta (the halving factor) must be a whole number of at least 2, got ${eta}`);
  const counts = [trials];
  for (let epochs = minEpochs; epochs < maxEpochs * (1 - 1e-9) && counts[counts.length - 1] > 1; epochs *= eta) {
    counts.push(Math.max(1, Math.floor(counts[counts.length - 1] / eta)));
  }
  if (counts.length === 1) return [{ epochs: minEpochs, trials }];
  const last = counts.length - 1;
  const epochsAt = (rung: number) => rung === 0 ? minEpochs : rung === last ? maxEpochs : tidyEpochs(minEpochs * (maxEpochs / minEpochs) ** (rung / last));
  return counts.map((count, rung) => ({ epochs: epochsAt(rung), trials: count }));
}

/**
 * The first rung's epochs when the request names none: as far below `maxEpochs` as the trials allow rungs
 * (trials, trials/eta, ... 1: Hyperband's most exploring bracket), but no trial sees fewer than
 * `minExamples` examples (or the whole split, where it is smaller).
 */
export function firstRungEpochs(trials: number, maxEpochs: number, eta: number, trainExamples: number, minExamples = 2000): number {
  const rungsBelow = Math.floor(Math.log(Math.max(trials, 1)) / Math.log(eta) + 1e-9);
  const floor = minExamples / Math.max(trainExamples, 1);
  const epochs = Math.max(floor, maxEpochs / eta ** rungsBelow);
  return Math.min(maxEpochs, epochs >= 1 ? Math.round(epochs) : tidyEpochs(epochs));
}

/** Whole epochs from 1 on (a product like 3 x 0.3333 lands a hair off 1); a share below 1 to 4 digits. */
function tidyEpochs(epochs: number): number {
  const near = Math.round(epochs);
  if (near >= 1 && Math.abs(epochs - near) < 0.005 * near) return near;
  return epochs >= 1 ? Math.round(epochs) : Number(epochs.toPrecision(4));
}

/** The epochs a plan trains in all (its cost in trial-epochs). */
export function plannedEpochs(rungs: readonly Rung[]): number {
  return rungs.reduce((sum, rung) => sum + rung.epochs * rung.trials, 0);
}

/** A rung's epochs as a person reads them: "3 epochs", "1 epoch", "1/9 epoch", "0.15 epoch". */
export function epochsText(epochs: number): string {
  if (epochs >= 1) return `${epochs} epoch${epochs === 1 ? '' : 's'}`;
  const inverse = Math.round(1 / epochs);
  return Math.abs(1 / epochs - inverse) < 0.01 ? `1/${inverse} epoch` : `${Number(epochs.toPrecision(2))} epoch`;
}

/** Epochs in a narrow column: "9", "1/3", "0.15". */
export function epochsShort(epochs: number): string {
  return epochs >= 1 ? String(epochs) : epochsText(epochs).replace(/ epoch$/, '');
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
