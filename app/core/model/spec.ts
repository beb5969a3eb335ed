// The model spec of DESIGN §2: the JSON both the TypeScript side and the C++ engine read.
// This file is the one schema; every face validates specs through `parseModelSpec`.
import { z } from 'zod';
import { issueText } from '../files/messages';

/** gelu is the exact erf form, x·Φ(x) (PyTorch's default). */
export const activationNames = ['linear', 'relu', 'leaky_relu', 'sigmoid', 'tanh', 'softplus', 'softmax', 'gelu'] as const;
export type ActivationName = (typeof activationNames)[number];
export const lossNames = ['softmax_cross_entropy', 'binary_cross_entropy', 'mse', 'mae', 'huber'] as const;
export type LossName = (typeof lossNames)[number];
/** The losses a regression can train with (its head's outputs are the predictions). */
export const regressionLossNames = ['mse', 'mae', 'huber'] as const satisfies readonly LossName[];
export const taskNames = ['classification', 'regression'] as const;
export type TaskName = (typeof taskNames)[number];
export const paddingNames = ['valid', 'same', 'full'] as const;

const positiveInt = z.number().int().positive();
const activation = z.enum(activationNames);
const alpha = z.number().finite().nonnegative().optional();

export const denseLayerSchema = z.strictObject({
  kind: z.literal('dense'),
  units: positiveInt,
  activation: activation.optional(),
  alpha,
});
export const conv2dLayerSchema = z.strictObject({
  kind: z.literal('conv2d'),
  filters: positiveInt,
  kernel: z.tuple([positiveInt, positiveInt]),
  stride: positiveInt.optional(),
  padding: z.enum(paddingNames).optional(),
  activation: activation.optional(),
  alpha,
});
export const poolLayerSchema = z.strictObject({
  kind: z.enum(['maxpool2d', 'avgpool2d']),
  size: positiveInt,
  stride: positiveInt.optional(),
});
export const flattenLayerSchema = z.strictObject({ kind: z.literal('flatten') });
export const dropoutLayerSchema = z.strictObject({
  kind: z.literal('dropout'),
  rate: z.number().min(0).lt(1),
});
export const activationLayerSchema = z.strictObject({
  kind: z.literal('activation'),
  fn: activation,
  alpha,
});

/**
 * Normalises each channel of an image [C,H,W] over the batch and its pixels (each feature of a flat input
 * over the batch): the batch's statistics in training, the running statistics in evaluation.
 * running = (1 - momentum)·running + momentum·batch (PyTorch's convention); eps under the square root;
 * affine: learnable gamma and beta. Its tensors: gamma, beta (when affine), running_mean, running_var.
 */
export const batchnormLayerSchema = z.strictObject({
  kind: z.literal('batchnorm'),
  momentum: z.number().min(0).max(1).optional(),
  eps: z.number().positive().finite().optional(),
  affine: z.boolean().optional(),
});
/** The mean of each channel of an image: [C,H,W] -> [C]. */
export const globalAvgPoolLayerSchema = z.strictObject({ kind: z.literal('global_avgpool') });
/** batchnorm's defaults (PyTorch's). */
export const batchnormDefaults = { momentum: 0.1, eps: 1e-5, affine: true } as const;

/** A layer that may sit inside a residual block: every kind but a block (blocks do not nest). */
const plainLayerSchemas = [
  denseLayerSchema,
  conv2dLayerSchema,
  poolLayerSchema,
  flattenLayerSchema,
  dropoutLayerSchema,
  activationLayerSchema,
  batchnormLayerSchema,
  globalAvgPoolLayerSchema,
] as const;
export const plainLayerSchema = z.discriminatedUnion('kind', [...plainLayerSchemas]);
export type PlainLayerSpec = z.infer<typeof plainLayerSchema>;
/**
 * A residual block: its layers' output plus the shortcut of its input, the identity when they keep the
 * shape, else a 1x1 convolution (with bias) whose stride is the smallest s with ceil(in / s) = out on both
 * axes. Its tensors: layers.<i>.layers.<j>.* then layers.<i>.shortcut.weight/bias (with a projection).
 */
export const residualLayerSchema = z.strictObject({
  kind: z.literal('residual'),
  layers: z.array(plainLayerSchema).min(1),
  shortcut: z.literal('auto').optional(),
});
export type ResidualLayerSpec = z.infer<typeof residualLayerSchema>;
export const layerSchema = z.discriminatedUnion('kind', [...plainLayerSchemas, residualLayerSchema]);
export type LayerSpec = z.infer<typeof layerSchema>;
export type LayerKind = LayerSpec['kind'];

export const sgdSchema = z.strictObject({
  kind: z.literal('sgd'),
  lr: z.number().positive().finite(),
  momentum: z.number().min(0).lt(1).optional(),
  /** Nesterov momentum (PyTorch's nesterov=True); needs momentum > 0. */
  nesterov: z.boolean().optional(),
  /** Coupled L2 on the weights (not the biases): gradient += weightDecay * w. Default 0. */
  weightDecay: z.number().finite().nonnegative().optional(),
  /** Decoupled decay instead (SGDW): w -= lr * weightDecay * w before the update. */
  decoupledWeightDecay: z.boolean().optional(),
});
export const adamSchema = z.strictObject({
  kind: z.literal('adam'),
  lr: z.number().positive().finite(),
  beta1: z.number().min(0).lt(1).optional(),
  beta2: z.number().min(0).lt(1).optional(),
  eps: z.number().positive().optional(),
  weightDecay: z.number().finite().nonnegative().optional(),
});
/** torch.optim.AdamW: decoupled weight decay (w -= lr * weightDecay * w, then Adam's step). */
export const adamwSchema = adamSchema.extend({ kind: z.literal('adamw') });
export const optimizerSchema = z.discriminatedUnion('kind', [sgdSchema, adamSchema, adamwSchema]);
export type OptimizerSpec = z.infer<typeof optimizerSchema>;

export const modelSpecSchema = z
  .strictObject({
    input: z.union([z.tuple([positiveInt]), z.tuple([positiveInt, positiveInt, positiveInt])]),
    /** Absent: classification. */
    task: z.enum(taskNames).optional(),
    layers: z.array(layerSchema).min(1),
    loss: z.enum(lossNames),
    /** huber: quadratic below delta, linear above (PyTorch's HuberLoss). Default 1. */
    huberDelta: z.number().positive().finite().optional(),
    /** softmax_cross_entropy: the target (1 - s) one-hot + s / K (PyTorch's label_smoothing), 0..0.5. */
    labelSmoothing: z.number().min(0).max(0.5).optional(),
    optimizer: optimizerSchema,
    seed: z.number().int().nonnegative(),
  })
  .superRefine((spec, context) => {
    if (spec.task === 'regression' && !(regressionLossNames as readonly string[]).includes(spec.loss)) {
      context.addIssue({
        code: 'custom',
        path: ['loss'],
        message: `a regression needs loss mse, mae or huber, got "${spec.loss}"`,
      });
    }
    if (spec.optimizer.kind === 'sgd' && spec.optimizer.nesterov === true && !((spec.optimizer.momentum ?? 0) > 0)) {
      context.addIssue({ code: 'custom', path: ['optimizer', 'nesterov'], message: 'nesterov needs a momentum > 0 (as PyTorch)' });
    }
    if ((spec.labelSmoothing ?? 0) > 0 && spec.loss !== 'softmax_cross_entropy') {
      context.addIssue({ code: 'custom', path: ['labelSmoothing'], message: `labelSmoothing needs loss softmax_cross_entropy, got "${spec.loss}"` });
    }
  });
export type ModelSpec = z.infer<typeof modelSpecSchema>;

/** The spec's task (absent = classification). */
export function specTask(spec: Pick<ModelSpec, 'task'>): TaskName {
  return spec.task ?? 'classification';
}

/** Adam's defaults (Keras): lr 0.001, betas 0.9/0.999, eps 1e-7. */
export const adamDefaults = { beta1: 0.9, beta2: 0.999, eps: 1e-7 } as const;

/** Validates an unknown value as a model spec; the error names the first bad field. */
export function parseModelSpec(value: unknown): ModelSpec {
  const parsed = modelSpecSchema.safeParse(value);
  if (!parsed.success) {
    throw new Error(`invalid model spec at ${issueText(parsed.error, '', 'spec')}`);
  }
  return parsed.data;
}
