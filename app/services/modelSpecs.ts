// Turns what a user chose (a layer string, a preset or nothing, plus loss and optimizer settings) into a
// validated ModelSpec for a dataset's shape and classes. One place, so every face builds models alike.
import { defaultSpec, isSmallRegressionTable, smallRegressionWeightDecay } from '../core/model/defaults';
import { isCourseLayers, LayerSyntaxError, parseCourseLayers, parseLayerItems, parseLayers } from '../core/model/layerSyntax';
import { layerProblem } from '../core/model/layerMessages';
import { getPreset, presetForData, type Preset } from '../core/model/presets';
import { inferShapes, inferShapesPartial, layerLabels } from '../core/model/shapes';
import type { LayerCheck, ModelCheck } from '../core/model/modelCheck';
import { asHead, headError, toRegression, type ModelHead } from '../core/model/head';
import { adamDefaults, parseModelSpec, type LayerSpec, type LossName, type ModelSpec, type OptimizerSpec } from '../core/model/spec';

export type { LayerCheck, ModelCheck } from '../core/model/modelCheck';

export interface ModelChoice {
  /** Compact layer syntax (docs/LAYERS.md) or the course tool's widths `30,60,10,1`. */
  layers?: string;
  preset?: string;
  loss?: LossName;
  optimizer?: 'sgd' | 'adam' | 'adamw';
  lr?: number;
  momentum?: number;
  /** SGD: Nesterov momentum (needs momentum > 0). */
  nesterov?: boolean;
  /** L2 penalty on the weights (not biases); default: the preset's, else 0. AdamW's is decoupled. */
  weightDecay?: number;
  /** SGD: the weight decay decoupled from the gradient (SGDW) instead of added to it. */
  decoupledWeightDecay?: boolean;
  /** Softmax cross-entropy: the targets smoothed by this much (0..0.5). */
  labelSmoothing?: number;
  seed?: number;
}

export interface BuiltModel {
  spec: ModelSpec;
  /** The preset's batch size and epochs, when a preset was chosen. */
  presetTraining?: Preset['training'];
  /** The course tool's form implies SGD on the quadratic cost. */
  courseForm: boolean;
}

function flatInput(inputShape: readonly number[]): ModelSpec['input'] {
  return inputShape.length === 3 ? [inputShape[0], inputShape[1], inputShape[2]] : [inputShape.reduce((a, b) => a * b, 1)];
}

function chooseOptimizer(base: OptimizerSpec, choice: ModelChoice, courseForm: boolean): OptimizerSpec {
  const kind = choice.optimizer ?? (courseForm ? 'sgd' : base.kind);
  if (kind !== 'sgd' && (choice.nesterov || choice.decoupledWeightDecay)) throw new Error('--nesterov and --decoupled-decay apply to --optimizer sgd only');
  if (kind === 'sgd') {
    const inherited = base.kind === 'sgd' ? base : undefined;
    const nesterov = choice.nesterov ?? inherited?.nesterov;
    const decoupled = choice.decoupledWeightDecay ?? inherited?.decoupledWeightDecay;
    return {
      kind: 'sgd',
      lr: choice.lr ?? inherited?.lr ?? (courseForm ? 0.01 : 0.01),
      momentum: choice.momentum ?? inherited?.momentum ?? 0,
      ...(nesterov ? { nesterov: true } : {}),
      ...weightDecayOf(base, choice),
      ...(decoupled ? { decoupledWeightDecay: true } : {}),
    };
  }
  if (choice.momentum !== undefined) throw new Error('--momentum applies to --optimizer sgd only');
  const inherited = base.kind !== 'sgd' ? base : undefined;
  return {
    kind,
    lr: choice.lr ?? inherited?.lr ?? 0.001,
    beta1: inherited?.beta1 ?? adamDefaults.beta1,
    beta2: inherited?.beta2 ?? adamDefaults.beta2,
    eps: inherited?.eps ?? adamDefaults.eps,
    ...weightDecayOf(base, choice),
  };
}

/** The chosen weight decay, else the base spec's; absent when 0 (specs without it stay as they were). */
function weightDecayOf(base: OptimizerSpec, choice: ModelChoice): { weightDecay?: number } {
  const decay = choice.weightDecay ?? base.weightDecay ?? 0;
  return decay > 0 ? { weightDecay: decay } : {};
}

/**
 * Builds and validates the spec; throws with a message naming the layer or option at fault. `head` is the
 * data's class count, or a regression head ({task: 'regression', outputs: target columns}).
 */
export function buildModelSpec(choice: ModelChoice, inputShape: readonly number[], head: number | ModelHead): BuiltModel {
  const built = composeModelSpec(choice, inputShape, head);
  inferShapes(built.spec);
  const error = headError(built.spec, asHead(head));
  if (error) throw new Error(error);
  return built;
}

/**
 * Parses the user's choice into a spec that is valid JSON-wise (every field in range) but whose layers may
 * not fit together yet: buildModelSpec throws on that, checkModelChoice reports it per layer.
 */
export function composeModelSpec(choice: ModelChoice, inputShape: readonly number[], head: number | ModelHead): BuiltModel {
  const { task, outputs, rows } = asHead(head);
  if (task === 'regression') return composeRegressionSpec(choice, inputShape, outputs, rows);
  const classCount = outputs;
  if (choice.layers !== undefined && choice.preset !== undefined) throw new Error('give either --layers or --preset, not both');
  const seed = choice.seed ?? 0;
  let base: ModelSpec;
  let presetTraining: BuiltModel['presetTraining'];
  let courseForm = false;
  if (choice.preset !== undefined) {
    const preset = getPreset(choice.preset);
    base = presetForData(preset, inputShape, classCount);
    presetTraining = preset.training;
  } else if (choice.layers !== undefined && isCourseLayers(choice.layers)) {
    const featureCount = inputShape.reduce((a, b) => a * b, 1);
    const course = parseCourseLayers(choice.layers, featureCount);
    courseForm = true;
    const outputs = course.layers[course.layers.length - 1];
    const expected = classCount === 2 ? [1, 2] : [classCount];
    if (outputs.kind === 'dense' && !expected.includes(outputs.units)) {
      throw new Error(`--layers: the last width ${outputs.units} does not fit the data's ${classCount} classes (use ${expected.join(' or ')})`);
    }
    base = { ...defaultSpec(inputShape, classCount, seed), input: [featureCount], layers: course.layers, loss: course.loss };
  } else if (choice.layers !== undefined) {
    base = { ...defaultSpec(inputShape, classCount, seed), input: flatInput(inputShape), layers: parseLayers(choice.layers, inputShape) };
  } else {
    base = defaultSpec(inputShape, classCount, seed);
  }
  const labelSmoothing = choice.labelSmoothing ?? base.labelSmoothing;
  const spec = parseModelSpec({
    ...base,
    loss: choice.loss ?? base.loss,
    optimizer: chooseOptimizer(base.optimizer, choice, courseForm),
    ...(labelSmoothing ? { labelSmoothing } : {}),
    seed,
  });
  return { spec, presetTraining, courseForm };
}

/**
 * A regression model: the classification model the choice would give for two classes (the default
 * dense 100 relu for tables, a preset, the user's layers), turned to a linear head of `targets` units
 * trained with mse (or the loss chosen).
 */
function composeRegressionSpec(choice: ModelChoice, inputShape: readonly number[], targets: number, rows?: number): BuiltModel {
  if (choice.layers !== undefined && isCourseLayers(choice.layers)) {
    throw new Error('--layers: the course form (widths only) is for classification; give layers like "dense:100:relu,dense:1"');
  }
  const asClassifier = composeModelSpec({ ...choice, loss: undefined }, inputShape, 2);
  const sizeHead = choice.layers === undefined;
  const base = toRegression(asClassifier.spec, targets, { lossChosen: false, sizeHead });
  if (choice.weightDecay === undefined && choice.preset === undefined && rows !== undefined && isSmallRegressionTable('regression', rows, inputShape)) {
    base.optimizer = { ...base.optimizer, weightDecay: smallRegressionWeightDecay };
  }
  const spec = parseModelSpec({ ...base, loss: choice.loss ?? base.loss });
  return { ...asClassifier, spec };
}

/**
 * Like buildModelSpec, but never throws for a bad choice: returns every layer's shape up to the first
 * invalid one, and that layer's error, for the model editor's live table.
 */
export function checkModelChoice(choice: ModelChoice, inputShape: readonly number[], head: number | ModelHead): ModelCheck {
  let spec: ModelSpec;
  try {
    spec = composeModelSpec(choice, inputShape, head).spec;
  } catch (error) {
    const failed = { ok: false, input: [...inputShape], layers: [], totalParameters: 0, totalMultiplyAdds: 0 };
    // A layer the text could not read: named the editor's way, beside that layer.
    if (error instanceof LayerSyntaxError && error.place) {
      const { item, kind, reason } = error.place;
      return { ...failed, error: { message: layerProblem(item, kind, reason), itemIndex: item } };
    }
    return { ...failed, error: { message: error instanceof Error ? error.message : String(error) } };
  }
  const report = inferShapesPartial(spec);
  const labels = layerLabels(spec.layers);
  const layers: LayerCheck[] = spec.layers.map((layer, index) => {
    const info = report.layers[index];
    const block = info?.block && {
      layers: info.block.layers.map((inner) => ({ kind: inner.kind, outputShape: inner.outputShape, parameters: inner.parameters, multiplyAdds: inner.multiplyAdds })),
      shortcut: info.block.shortcut,
    };
    return info
      ? { label: info.label, kind: info.kind, outputShape: info.outputShape, parameters: info.parameters, multiplyAdds: info.multiplyAdds, ...(block ? { block } : {}) }
      : { label: labels[index], kind: layer.kind };
  });
  let error: ModelCheck['error'];
  if (report.error) {
    error = layerError(spec, choice, inputShape, report.error.layerIndex, report.error.message);
  } else {
    const message = headError(spec, asHead(head));
    if (message) error = layerError(spec, choice, inputShape, layers.length - 1, message);
  }
  if (error?.layerIndex !== undefined) layers[error.layerIndex].error = error.message;
  return {
    ok: error === undefined,
    spec,
    input: [...spec.input],
    layers,
    totalParameters: report.layers.reduce((sum, layer) => sum + layer.parameters, 0),
    totalMultiplyAdds: report.layers.reduce((sum, layer) => sum + layer.multiplyAdds, 0),
    error,
  };
}

/**
 * The check's error at spec layer `layerIndex` in the editor's words ("Layer 3 (convolution): kernel 5x5
 * larger than input 4x4"), numbered as the user's layers are: a flatten added before a dense layer is none
 * of them. The engine's label ("conv2d #2: ") is dropped from `message`.
 */
function layerError(spec: ModelSpec, choice: ModelChoice, inputShape: readonly number[], layerIndex: number | undefined, message: string): ModelCheck['error'] {
  if (layerIndex === undefined) return { message };
  const items = choice.layers !== undefined ? parseLayerItems(choice.layers, inputShape).items : spec.layers.map((_, i) => i);
  const item = items[layerIndex];
  // (a block's layer: "layer 3 (residual), its layer 2 (conv2d): ..." keeps "its layer 2 (conv2d): ...")
  const reason = message.replace(/^[a-z_0-9]+ #\d+: /, '').replace(/^layer \d+ \(residual\), /, '');
  const nextItem = items.slice(layerIndex).find((entry) => entry !== undefined);
  return { message: layerProblem(item, spec.layers[layerIndex].kind, reason, nextItem), layerIndex, ...(item !== undefined ? { itemIndex: item } : {}) };
}
