// The arithmetic of a run's CUDA tensor-core products: the convolutions and the fused MLP step's (issue 16;
// engine.h Precision). fp32: FP32 accuracy (the tensor-core passes as 3xTF32); tf32: one TF32 product per
// multiply (a 10-bit mantissa, PyTorch's default for cuDNN convolutions); mixed: one BF16 product per multiply
// in the convolutions (a 7-bit mantissa; the fused MLP step stays TF32). All three keep FP32 sums, activations,
// weights, optimizer state, batchnorm statistics and losses. Mixed is the GPU's default: measured on every preset
// it keeps the test accuracy within 0.3 points of FP32 (within 0.02 on an H100) and is the fastest of the three
// (docs/PRECISION.md). The CPU computes in FP32 whatever is asked.
import { z } from 'zod';

export const precisions = ['fp32', 'tf32', 'mixed'] as const;
export type Precision = (typeof precisions)[number];
export const precisionSchema = z.enum(precisions);

/** The GPU's default (docs/PRECISION.md). */
export const defaultGpuPrecision: Precision = 'mixed';

/** What a run computes with: the asked precision (default mixed) on CUDA, FP32 on the CPU. */
export function effectivePrecision(asked: Precision | undefined, device: 'cpu' | 'cuda'): Precision {
  return device === 'cuda' ? asked ?? defaultGpuPrecision : 'fp32';
}

/** The plan's note when the CPU is asked for TF32 or mixed precision. */
export function precisionNotes(asked: Precision | undefined, device: 'cpu' | 'cuda'): string[] {
  if (device === 'cuda' || asked === undefined || asked === 'fp32') return [];
  const name = asked === 'tf32' ? 'TF32' : 'Mixed precision (BF16)';
  return [`${name} applies to the GPU's tensor-core products: the CPU trains in FP32`];
}
