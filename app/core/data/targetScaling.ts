// Regression targets are standardised for training ((y - mean) / std per target column, fitted on the
// training split only, like scikit-learn's TransformedTargetRegressor with a StandardScaler): the head then
// learns values of order 1 whatever the units (prices in the hundreds of thousands, or fractions), and
// one learning rate suits every table. The statistics are stored in the model file (preprocessing.target),
// so predict, eval and the ONNX graph turn the head's outputs back into the original units.
import { z } from 'zod';
import type { Dataset } from './dataset';

export const targetScalingSchema = z
  .strictObject({
    /** The target columns, in the head's output order. */
    names: z.array(z.string()).min(1),
    mean: z.array(z.number().finite()).min(1),
    std: z.array(z.number().finite().positive()).min(1),
  })
  .refine((value) => value.mean.length === value.names.length && value.std.length === value.names.length, {
    message: 'target names, mean and std differ in length',
  });
export type TargetScaling = z.infer<typeof targetScalingSchema>;

/** The width of a regression dataset's targets (its target columns). */
export function targetWidth(dataset: Dataset): number {
  return dataset.targetNames?.length ?? 1;
}

/** Mean and population standard deviation of each target column over the dataset's rows (the training split). */
export function fitTargetScaling(dataset: Dataset): TargetScaling {
  const targets = dataset.targets;
  if (dataset.task !== 'regression' || targets === undefined) throw new Error(`${dataset.source}: no regression targets to scale`);
  if (dataset.count === 0) throw new Error(`${dataset.source}: cannot fit the target scaling on an empty training split`);
  const width = targetWidth(dataset);
  const names = dataset.targetNames ?? ['target'];
  const mean = new Array<number>(width).fill(0);
  const std = new Array<number>(width).fill(0);
  for (let column = 0; column < width; column++) {
    let sum = 0;
    for (let i = 0; i < dataset.count; i++) sum += targets[i * width + column];
    const center = sum / dataset.count;
    let squares = 0;
    for (let i = 0; i < dataset.count; i++) squares += (targets[i * width + column] - center) ** 2;
    const deviation = Math.sqrt(squares / dataset.count);
    mean[column] = center;
    // a constant target keeps std 1, so scaling never divides by zero
    std[column] = deviation > 1e-12 * Math.max(1, Math.abs(center)) && Number.isFinite(deviation) ? deviation : 1;
  }
  return { names: [...names], mean, std };
}

/** The dataset's targets as the engine trains on them: (y - mean) / std. */
export function scaleTargets(scaling: TargetScaling, targets: Float32Array): Float32Array {
  const width = scaling.names.length;
  if (targets.length % width !== 0) throw new Error(`${targets.length} target values are not whole rows of ${width} targets`);
  const scaled = new Float32Array(targets.length);
  for (let i = 0; i < targets.length; i++) {
    const column = i % width;
    scaled[i] = (targets[i] - scaling.mean[column]) / scaling.std[column];
  }
  return scaled;
}

/** The head's outputs in the original units: output * std + mean, in float64. */
export function unscaleOutputs(scaling: TargetScaling, outputs: ArrayLike<number>): Float64Array {
  const width = scaling.names.length;
  if (outputs.length % width !== 0) throw new Error(`${outputs.length} outputs are not whole rows of ${width} targets`);
  const values = new Float64Array(outputs.length);
  for (let i = 0; i < outputs.length; i++) {
    const column = i % width;
    values[i] = outputs[i] * scaling.std[column] + scaling.mean[column];
  }
  return values;
}
