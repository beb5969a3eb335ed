// Turns what a user chose (a layer string, a preset or nothing, plus loss and optimizer settings) into a
// validated ModelSpec for a dataset's shape and classes. One place, so every face builds models alike.
import { defaultSpec } from '../core/model/defaults';
import { isCourseLayers, parseCourseLayers, parseLayers } from '../core/model/layerSyntax';
import { getPreset, presetForData } from '../core/model/presets';
import { classCount as specClassCount, inferShapes } from '../core/model/shapes';
import { adamDefaults, parseModelSpec, type LossName, type ModelSpec, type OptimizerSpec } from '../core/model/spec';

export interface ModelChoice {
  /** Compact layer syntax (docs/LAYERS.md) or the course tool's widths `30,60,10,1`. */
  layers?: string;
  preset?: string;
  loss?: LossName;
  optimizer?: 'sgd' | 'adam';
  lr?: number;
  momentum?: number;
  seed?: number;
}

export interface BuiltModel {
  spec: ModelSpec;
  /** The preset's batch size and epochs, when a preset was chosen. */
  presetTraining?: { batchSize: number; epochs: number };
  /** The course tool's form implies SGD on the quadratic cost. */
  courseForm: boolean;
}

function flatInput(inputShape: readonly number[]): ModelSpec['input'] {
  return inputShape.length === 3 ? [inputShape[0], inputShape[1], inputShape[2]] : [inputShape.reduce((a, b) => a * b, 1)];
}

function chooseOptimizer(base: OptimizerSpec, choice: ModelChoice, courseForm: boolean): OptimizerSpec {
  const kind = choice.optimizer ?? (courseForm ? 'sgd' : base.kind);
  if (kind === 'sgd') {
    const inherited = base.kind === 'sgd' ? base : undefined;
    return {
      kind: 'sgd',
      lr: choice.lr ?? inherited?.lr ?? (courseForm ? 0.01 : 0.01),
      momentum: choice.momentum ?? inherited?.momentum ?? 0,
    };
  }
  if (choice.momentum !== undefined) throw new Error('--momentum applies to --optimizer sgd only');
  const inherited = base.kind === 'adam' ? base : undefined;
  return {
    kind: 'adam',
    lr: choice.lr ?? inherited?.lr ?? 0.001,
    beta1: inherited?.beta1 ?? adamDefaults.beta1,
    beta2: inherited?.beta2 ?? adamDefaults.beta2,
    eps: inherited?.eps ?? adamDefaults.eps,
  };
}

/** Builds and validates the spec; throws with a message naming the layer or option at fault. */
export function buildModelSpec(choice: ModelChoice, inputShape: readonly number[], classCount: number): BuiltModel {
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
  const spec = parseModelSpec({
    ...base,
    loss: choice.loss ?? base.loss,
    optimizer: chooseOptimizer(base.optimizer, choice, courseForm),
    seed,
  });
  inferShapes(spec);
  const outputs = specClassCount(spec);
  if (outputs !== classCount) {
    const widths = classCount === 2 ? '1 or 2 units' : `${classCount} units`;
    throw new Error(`the last layer predicts ${outputs} classes but the data has ${classCount}: give it ${widths}`);
  }
  return { spec, presetTraining, courseForm };
}
