// The arithmetic of a run's CUDA tensor-core products: the convolutions and the fused MLP step's (issue 16;
// engine.h Precision). fp32: FP32 accuracy (the tensor-core passes as 3xTF32); tf32: one TF32 product per
// multiply (a 10-bit mantissa, PyTorch's default for cuDNN convolutions) with FP32 sums, weights, optimizer
// state, batchnorm statistics and losses. TF32 is the GPU's default: measured on every preset it keeps the test
// accuracy within 0.3 points of FP32 and trains up to 12 % faster (docs/PRECISION.md). The CPU computes in FP32
// whatever is asked.
import { z } from 'zod';

export const precisions = ['fp32', 'tf32'] as const;
export type Precision = (typeof precisions)[number];
export const precisionSchema = z.enum(precisions);

/** The GPU's default (docs/PRECISION.md). */
export const defaultGpuPrecision: Precision = 'tf32';

/** What a run computes with: the asked precision (default TF32) on CUDA, FP32 on the CPU. */
export function effectivePrecision(asked: Precision | undefined, device: 'cpu' | 'cuda'): Precision {
  return device === 'cuda' ? asked ?? defaultGpuPrecision : 'fp32';
}

/** The plan's note when the CPU is asked for TF32. */
export function precisionNotes(asked: Precision | undefined, device: 'cpu' | 'cuda'): string[] {
  return asked === 'tf32' && device !== 'cuda' ? ['TF32 applies to the GPU\'s tensor-core products: the CPU trains in FP32'] : [];
}
