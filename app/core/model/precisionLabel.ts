// How the CLI and the UI name a run's precision (no zod here: the renderer bundles this).
import type { Precision } from './precision';

/** "mixed (16-bit)" (BF16 products, FP16 with loss scaling on GPUs without BF16), "TF32", "FP32". */
export function precisionLabel(precision: Precision): string {
  return precision === 'mixed' ? 'mixed (16-bit)' : precision.toUpperCase();
}
