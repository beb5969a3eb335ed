// The arithmetic of a run's CUDA convolutions (issue 16; engine.h Precision). fp32: FP32 accuracy (the
// tensor-core passes as 3xTF32); tf32: one TF32 product per multiply (a 10-bit mantissa, PyTorch's default
// for cuDNN convolutions) with FP32 sums, weights, optimizer state, batchnorm statistics and losses. The CPU
// computes in FP32 whatever is asked. docs/PRECISION.md has the measurements.
import { z } from 'zod';

export const precisions = ['fp32', 'tf32'] as const;
export type Precision = (typeof precisions)[number];
export const precisionSchema = z.enum(precisions);

/** What a run computes with: the asked precision on CUDA, FP32 on the CPU. */
export function effectivePrecision(asked: Precision | undefined, device: 'cpu' | 'cuda'): Precision {
  return device === 'cuda' ? asked ?? 'fp32' : 'fp32';
}

/** The plan's note when the CPU is asked for TF32. */
export function precisionNotes(asked: Precision | undefined, device: 'cpu' | 'cuda'): string[] {
  return asked === 'tf32' && device !== 'cuda' ? ['TF32 applies to the GPU\'s convolutions: the CPU trains in FP32'] : [];
}
