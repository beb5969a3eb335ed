// How the CLI and the UI name a run's precision (no zod here: the renderer bundles this).
import type { Precision } from './precision';

/** "mixed (BF16)", "TF32", "FP32". */
export function precisionLabel(precision: Precision): string {
  return precision === 'mixed' ? 'mixed (BF16)' : precision.toUpperCase();
}
