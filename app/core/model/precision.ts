// The arithmetic of a run's CUDA tensor-core products: the convolutions and the fused MLP step's (issue 16;
// engine.h Precision). fp32: FP32 accuracy (the tensor-core passes as 3xTF32); tf32: one TF32 product per
// multiply (a 10-bit mantissa, PyTorch's default for cuDNN convolutions); mixed: one BF16 product per multiply
// in the convolutions (a 7-bit mantissa; the fused MLP step stays TF32), or on a GPU without BF16 (Turing,
// compute capability 7.x) one FP16 product with dynamic loss scaling. All three keep FP32 sums, activations,
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

/** The training GPU as the engine lists it: its name and "major.minor" compute capability. */
export interface PrecisionGpu { name: string; computeCapability?: string }

/** A GPU of compute capability 7.x (Turing's FP16 tensor cores, no BF16 or TF32 ones). */
function lacksBf16(gpu: PrecisionGpu | undefined): boolean {
  const major = Number.parseInt(gpu?.computeCapability ?? '', 10);
  return Number.isFinite(major) && major < 8;
}

/**
 * The plan's notes on precision: the CPU asked for TF32 or mixed (it trains in FP32); a GPU without BF16 asked
 * for mixed (FP16 products with loss scaling, docs/PRECISION.md) or TF32 (FP32: no TF32 tensor cores).
 */
export function precisionNotes(asked: Precision | undefined, device: 'cpu' | 'cuda', gpu?: PrecisionGpu): string[] {
  if (device === 'cuda') {
    const effective = effectivePrecision(asked, device);
    if (!lacksBf16(gpu) || effective === 'fp32') return [];
    return effective === 'mixed'
      ? [`${gpu?.name} has no BF16 tensor cores: mixed precision takes FP16 products with dynamic loss scaling (the run's notes say how many steps it skipped)`]
      : [`${gpu?.name} has no TF32 tensor cores: TF32 runs as FP32`];
  }
  if (asked === undefined || asked === 'fp32') return [];
  const name = asked === 'tf32' ? 'TF32' : 'Mixed precision';
  return [`${name} applies to the GPU's tensor-core products: the CPU trains in FP32`];
}
