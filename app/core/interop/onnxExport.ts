// ONNX export (DESIGN §3, docs/FILE_FORMAT.md "ONNX export"): a trained model as an ONNX graph that takes
// raw inputs as the data file holds them (pixels 0-255, tabular features after one-hot encoding) and
// outputs the class probabilities the engine's evaluation gives. Opset 13, IR version 7 (the IR of
// ONNX 1.8, which introduced opset 13).
//
// Layouts need no transposes: our tensors are NCHW, dense weights (units, inputs) = Gemm's B with
// transB=1, conv weights (filters, C, kh, kw) = Conv's W, and flatten keeps C,H,W order as ONNX's does.
// batchnorm is BatchNormalization in inference mode (its running statistics; (N, C) or (N, C, H, W)
// alike), global_avgpool is GlobalAveragePool then Flatten, and gelu is its erf form built from Div, Erf,
// Add and Mul (opset 13 has no Gelu). A residual block is its layers' nodes, then Add of their output and
// the shortcut: the block's input itself, or a 1x1 Conv (the projection, layers.<i>.shortcut.*).
import { onnx } from 'onnx-proto';
import type { Preprocessing } from '../data/preprocess';
import type { TargetScaling } from '../data/targetScaling';
import type { Imputation } from '../data/imputation';
import type { Model } from '../model/modelFile';
import { classCount, inferShapes, layerLabels, parameterTable } from '../model/shapes';
import { batchnormDefaults } from '../model/spec';
import type { ActivationName, LayerSpec, ModelSpec, PlainLayerSpec, ResidualLayerSpec } from '../model/spec';
import type { LayerInfo } from '../model/shapes';
import { floatTensor, floatValueInfo, GraphBuilder } from './onnxGraph';

export const onnxOpsetVersion = 13;
export const onnxIrVersion = 7;
export const onnxInputName = 'input';
export const onnxOutputName = 'probabilities';
/** A regression model's output: the predicted target values in the data's units. */
export const onnxRegressionOutputName = 'values';

export interface OnnxExportOptions {
  /** producer_version, e.g. the package version. */
  producerVersion?: string;
  /** Shown as the graph's name; default "nnstudio_model". */
  graphName?: string;
}

// ---- layers ----

// The engine folds a trailing softmax (softmax cross-entropy) or sigmoid (binary cross-entropy) into the
// loss: the network's last layer outputs logits, and the head below turns them into probabilities.
function foldedHeadActivation(spec: ModelSpec): boolean {
  const last = spec.layers[spec.layers.length - 1];
  const fn = last.kind === 'activation' ? last.fn : last.kind === 'dense' || last.kind === 'conv2d' ? last.activation : undefined;
  return (spec.loss === 'softmax_cross_entropy' && fn === 'softmax') || (spec.loss === 'binary_cross_entropy' && fn === 'sigmoid');
}

function addActivation(graph: GraphBuilder, input: string, fn: ActivationName | undefined, alpha: number | undefined, label: string): string {
  switch (fn) {
    case undefined:
    case 'linear':
      return input;
    case 'relu':
      return graph.node('Relu', [input], `${label}_relu`);
    case 'leaky_relu':
      // the engine stores alpha as float32 (default 0.01), as ONNX's float attribute does
      return graph.node('LeakyRelu', [input], `${label}_leaky_relu`, { alpha: { float: alpha ?? 0.01 } });
    case 'sigmoid':
      return graph.node('Sigmoid', [input], `${label}_sigmoid`);
    case 'tanh':
      return graph.node('Tanh', [input], `${label}_tanh`);
    case 'softplus':
      return graph.node('Softplus', [input], `${label}_softplus`);
    case 'softmax':
      // the engine allows softmax on flat tensors only, (N, F): the last axis
      return graph.node('Softmax', [input], `${label}_softmax`, { axis: -1 });
    case 'gelu':
      return addGelu(graph, input, label);
  }
}

// gelu(x) = 0.5 x (1 + erf(x / sqrt 2)), exact as the engine's
function addGelu(graph: GraphBuilder, input: string, label: string): string {
  const sqrt2 = graph.constant(`${label}_gelu_sqrt2`, [], [Math.SQRT2]);
  const one = graph.constant(`${label}_gelu_one`, [], [1]);
  const half = graph.constant(`${label}_gelu_half`, [], [0.5]);
  const erf = graph.node('Erf', [graph.node('Div', [input, sqrt2], `${label}_gelu_scaled`)], `${label}_gelu_erf`);
  const cdf = graph.node('Mul', [graph.node('Add', [erf, one], `${label}_gelu_erf1`), half], `${label}_gelu_cdf`);
  return graph.node('Mul', [input, cdf], `${label}_gelu`, {}, 'gelu: x * (1 + erf(x / sqrt 2)) / 2');
}

// BatchNormalization with the running statistics; without affine, gamma 1 and beta 0 as constants
function addBatchnorm(graph: GraphBuilder, layer: LayerSpec & { kind: 'batchnorm' }, prefix: string, input: string, channels: number, name: string, label: string): string {
  const tensor = (kind: string) => `${prefix}${kind}`;
  const affine = layer.affine !== false;
  const scale = affine ? tensor('gamma') : graph.constant(`${name}_gamma`, [channels], new Array<number>(channels).fill(1));
  const bias = affine ? tensor('beta') : graph.constant(`${name}_beta`, [channels], new Array<number>(channels).fill(0));
  const eps = layer.eps ?? batchnormDefaults.eps;
  return graph.node('BatchNormalization', [input, scale, bias, tensor('running_mean'), tensor('running_var')], name,
    { epsilon: { float: eps }, momentum: { float: 1 - (layer.momentum ?? batchnormDefaults.momentum) } },
    `${label}: the running statistics (evaluation)`);
}

/** Padding of one axis as the engine computes it (native/src/spec/spec.cpp convAxis): [before, after]. */
export function convPadding(input: number, kernel: number, stride: number, padding: 'valid' | 'same' | 'full'): [number, number] {
  if (padding === 'full') return [kernel - 1, kernel - 1];
  if (padding === 'valid') return [0, 0];
  // TensorFlow's 'same': ceil(in / stride) outputs, the odd pixel of padding at the bottom / right
  const outputs = Math.ceil(input / stride);
  const total = Math.max((outputs - 1) * stride + kernel - input, 0);
  return [Math.floor(total / 2), total - Math.floor(total / 2)];
}

function layerName(label: string): string {
  return label.replace(' #', '_');
}

// A residual block: its layers, then Add(their output, the shortcut); the projection is a 1x1 Conv with
// the block's stride and no padding.
function addBlock(graph: GraphBuilder, block: ResidualLayerSpec, index: number, input: string, inputShape: number[], info: LayerInfo, label: string): string {
  const name = layerName(label);
  let value = input;
  let shape = inputShape;
  block.layers.forEach((layer, j) => {
    value = addLayer(graph, layer, `layers.${index}.layers.${j}.`, value, shape, `${label} layer ${j + 1}`, `${name}_${j + 1}_${layer.kind}`, false);
    shape = info.block!.layers[j].outputShape;
  });
  const shortcutInfo = info.block!.shortcut;
  let shortcut = input;
  if (shortcutInfo.kind === 'projection') {
    const stride = shortcutInfo.stride;
    shortcut = graph.node('Conv', [input, `layers.${index}.shortcut.weight`, `layers.${index}.shortcut.bias`], `${name}_shortcut`, {
      kernel_shape: [1, 1],
      strides: [stride, stride],
      pads: [0, 0, 0, 0],
      dilations: [1, 1],
      group: 1,
    }, `${label}: the shortcut's 1x1 projection, stride ${stride}`);
  }
  return graph.node('Add', [value, shortcut], name, {}, `${label}: its layers' output + the ${shortcutInfo.kind === 'projection' ? 'projected' : 'identity'} shortcut`);
}

// One layer (a block's layers too) whose tensors are named `${prefix}weight` and so on.
function addLayer(graph: GraphBuilder, layer: PlainLayerSpec, prefix: string, input: string, inputShape: number[], label: string, name: string, skipActivation: boolean): string {
  const tensor = (kind: 'weight' | 'bias') => `${prefix}${kind}`;
  switch (layer.kind) {
    case 'dense': {
      const output = graph.node('Gemm', [input, tensor('weight'), tensor('bias')], name, { transB: 1 }, label);
      return skipActivation ? output : addActivation(graph, output, layer.activation, layer.alpha, name);
    }
    case 'conv2d': {
      const stride = layer.stride ?? 1;
      const padding = layer.padding ?? 'valid';
      const [top, bottom] = convPadding(inputShape[1], layer.kernel[0], stride, padding);
      const [left, right] = convPadding(inputShape[2], layer.kernel[1], stride, padding);
      const output = graph.node('Conv', [input, tensor('weight'), tensor('bias')], name, {
        kernel_shape: [layer.kernel[0], layer.kernel[1]],
        strides: [stride, stride],
        pads: [top, left, bottom, right],
        dilations: [1, 1],
        group: 1,
      }, `${label}, padding ${padding}`);
      return skipActivation ? output : addActivation(graph, output, layer.activation, layer.alpha, name);
    }
    case 'maxpool2d':
    case 'avgpool2d': {
      // floor mode and no padding, as the engine: count_include_pad never matters
      const stride = layer.stride ?? layer.size;
      const attributes = { kernel_shape: [layer.size, layer.size], strides: [stride, stride], pads: [0, 0, 0, 0], ceil_mode: 0 };
      return graph.node(layer.kind === 'maxpool2d' ? 'MaxPool' : 'AveragePool', [input], name, attributes, label);
    }
    case 'flatten':
      return graph.node('Flatten', [input], name, { axis: 1 }, `${label}: C,H,W order`);
    case 'dropout':
      return graph.node('Identity', [input], name, {}, `${label} (rate ${layer.rate}): identity at inference`);
    case 'activation':
      if (skipActivation) return input;
      return addActivation(graph, input, layer.fn, layer.alpha, name);
    case 'batchnorm':
      return addBatchnorm(graph, layer, prefix, input, inputShape[0], name, label);
    case 'global_avgpool': {
      const pooled = graph.node('GlobalAveragePool', [input], `${name}_pool`, {}, `${label}: the mean of each channel`);
      return graph.node('Flatten', [pooled], name, { axis: 1 }, `${label}: (N, C, 1, 1) -> (N, C)`);
    }
  }
}

// ---- preprocessing and head ----

/** Statistics of one field as a tensor broadcasting over (N, ...input): a scalar, or one value per feature. */
function statisticShape(values: number[], input: readonly number[]): number[] {
  return values.length === 1 ? [] : [...input];
}

/**
 * Missing cells (NaN in the input) filled with the training split's values, then the indicator features
 * (1 where the cell was NaN) appended: app/core/data/imputation.ts applyImputation as IsNaN, Where, Gather,
 * Cast and Concat.
 */
function addImputation(graph: GraphBuilder, input: string, imputation: Imputation): string {
  const fill = graph.constant('imputation_fill', [imputation.fill.length], imputation.fill);
  const missing = graph.node('IsNaN', [input], 'missing_cells');
  let filled = graph.node('Where', [missing, fill, input], 'imputed', {}, 'missing cells take the training split\'s fill values');
  filled = addIterativeSteps(graph, filled, missing, imputation);
  if (imputation.indicators.length === 0) return filled;
  const indices = graph.int64Constant('indicator_columns', [imputation.indicators.length], imputation.indicators);
  const picked = graph.node('Gather', [missing, indices], 'indicator_missing', { axis: 1 });
  const indicators = graph.node('Cast', [picked], 'missing_indicators', { to: onnx.TensorProto.DataType.FLOAT });
  return graph.node('Concat', [filled, indicators], 'with_indicators', { axis: 1 }, 'the <column>_missing features, appended');
}

/** Each iterative step: the missing cells of one feature become the regression on the row's other features. */
function addIterativeSteps(graph: GraphBuilder, filled: string, missing: string, imputation: Imputation): string {
  const width = imputation.fill.length;
  const cellsOf = new Map<number, string>();
  let value = filled;
  for (const step of imputation.iterative ?? []) {
    let cells = cellsOf.get(step.feature);
    if (cells === undefined) {
      const column = graph.boolConstant(`column_${step.feature}`, [1, width], Array.from({ length: width }, (_, k) => k === step.feature));
      cells = graph.node('And', [missing, column], `missing_in_${step.feature}`);
      cellsOf.set(step.feature, cells);
    }
    const weights = graph.constant(`estimate_${step.feature}_weights`, [width, 1], step.weights);
    const bias = graph.constant(`estimate_${step.feature}_bias`, [1], [step.bias]);
    const estimate = graph.node('Add', [graph.node('MatMul', [value, weights], `estimate_${step.feature}_sum`), bias], `estimate_${step.feature}`);
    value = graph.node('Where', [cells, estimate, value], `iterative_${step.feature}`, {}, `missing cells of feature ${step.feature} estimated from the others`);
  }
  return value;
}

// (x / pixelScale - center) / spread, the order of app/core/data/preprocess.ts normalizeFeatures.
function addPreprocessing(graph: GraphBuilder, input: string, preprocessing: Preprocessing, shape: readonly number[]): string {
  let value = preprocessing.imputation ? addImputation(graph, input, preprocessing.imputation) : input;
  if (preprocessing.pixelScale !== undefined) {
    const scale = graph.constant('pixel_scale', [], [preprocessing.pixelScale]);
    value = graph.node('Div', [value, scale], 'scaled_pixels', {}, `pixels / ${preprocessing.pixelScale}`);
  }
  if (preprocessing.kind === 'zscore') {
    const mean = graph.constant('zscore_mean', statisticShape(preprocessing.mean!, shape), preprocessing.mean!);
    const std = graph.constant('zscore_std', statisticShape(preprocessing.std!, shape), preprocessing.std!);
    const centered = graph.node('Sub', [value, mean], 'zscore_centered');
    value = graph.node('Div', [centered, std], 'normalized', {}, 'z-score: (x - mean) / std');
  } else if (preprocessing.kind === 'minmax') {
    const min = preprocessing.min!;
    const range = preprocessing.max!.map((max, i) => max - min[i]);
    const minName = graph.constant('minmax_min', statisticShape(min, shape), min);
    const rangeName = graph.constant('minmax_range', statisticShape(range, shape), range);
    const shifted = graph.node('Sub', [value, minName], 'minmax_shifted');
    value = graph.node('Div', [shifted, rangeName], 'normalized', {}, 'min-max: (x - min) / (max - min)');
  }
  return value;
}

/** What the graph's output holds, per loss: the engine's evaluation probabilities (engine.h). */
export function describeOnnxOutput(spec: ModelSpec, target?: TargetScaling): string {
  const width = inferShapes(spec).at(-1)!.outputShape[0];
  if (target !== undefined) {
    return `(N, ${width}): the predicted ${target.names.join(', ')} in the training data's units (the network's output * std + mean of the training targets)`;
  }
  if (width === 1) {
    const q = spec.loss === 'mse' || spec.loss === 'mae' ? 'the raw output q' : 'q = sigmoid(logit)';
    return `(N, 2): [1 - q, q] with ${q}; class 1 when q >= 0.5`;
  }
  switch (spec.loss) {
    case 'softmax_cross_entropy':
      return `(N, ${width}): softmax of the logits; the class is the argmax`;
    case 'binary_cross_entropy':
      return `(N, ${width}): sigmoid of each logit (independent per class); the class is the argmax`;
    default:
      return `(N, ${width}): the network's outputs as trained on ${spec.loss} against one-hot targets; the class is the argmax`;
  }
}

/** Regression: the network predicts standardised targets; output * std + mean gives them in the data's units. */
function addRegressionHead(graph: GraphBuilder, outputs: string, target: TargetScaling): string {
  const std = graph.constant('target_std', [target.std.length], target.std);
  const mean = graph.constant('target_mean', [target.mean.length], target.mean);
  const scaled = graph.node('Mul', [outputs, std], 'target_scaled', {}, 'standardised prediction * std of the training targets');
  return graph.node('Add', [scaled, mean], onnxRegressionOutputName, {}, '+ mean of the training targets');
}

function addHead(graph: GraphBuilder, logits: string, spec: ModelSpec, width: number): string {
  const logitLoss = spec.loss === 'softmax_cross_entropy' || spec.loss === 'binary_cross_entropy';
  if (width === 1) {
    const q = logitLoss ? graph.node('Sigmoid', [logits], 'positive_probability') : logits;
    const one = graph.constant('one', [], [1]);
    const negative = graph.node('Sub', [one, q], 'negative_probability');
    return graph.node('Concat', [negative, q], onnxOutputName, { axis: 1 });
  }
  if (spec.loss === 'softmax_cross_entropy') return graph.node('Softmax', [logits], onnxOutputName, { axis: 1 });
  if (spec.loss === 'binary_cross_entropy') return graph.node('Sigmoid', [logits], onnxOutputName);
  return graph.node('Identity', [logits], onnxOutputName);
}

// ---- metadata ----

export function describePreprocessing(preprocessing: Preprocessing): string {
  const steps: string[] = [];
  const imputation = preprocessing.imputation;
  if (imputation) {
    const indicators = imputation.indicators.length;
    steps.push(`fill missing (NaN) cells with the training split's values${indicators > 0 ? ` and append ${indicators} missing-indicator feature(s)` : ''}`);
  }
  if (preprocessing.pixelScale !== undefined) steps.push(`divide by ${preprocessing.pixelScale}`);
  if (preprocessing.kind === 'zscore') steps.push(`z-score with the training split's ${preprocessing.mean!.length === 1 ? 'global' : 'per-feature'} mean and std`);
  if (preprocessing.kind === 'minmax') steps.push(`min-max to [0,1] with the training split's ${preprocessing.min!.length === 1 ? 'global' : 'per-feature'} min and max`);
  return steps.length === 0 ? 'none: the input goes to the network as it is' : `${steps.join(', then ')} (nodes at the front of the graph)`;
}

function metadataProps(model: Model<Preprocessing>): onnx.IStringStringEntryProto[] {
  const entries: Record<string, string> = {
    producer: 'NN Studio',
    class_labels: JSON.stringify(model.labels),
    feature_names: JSON.stringify(model.featureNames),
    input_shape: JSON.stringify(model.spec.input),
    preprocessing: describePreprocessing(model.preprocessing),
    'nnstudio.preprocessing': JSON.stringify(model.preprocessing),
    'nnstudio.spec': JSON.stringify(model.spec),
    output: describeOnnxOutput(model.spec, model.preprocessing.target),
    ...(model.preprocessing.target ? { target_names: JSON.stringify(model.preprocessing.target.names) } : {}),
  };
  if (model.preprocessing.encoding?.columns.some((column) => column.kind === 'categorical')) {
    entries.categorical_columns = 'one-hot: the input takes the encoded features named in feature_names (column=category), not the CSV text';
  }
  return Object.entries(entries).map(([key, value]) => ({ key, value }));
}

// ---- the model ----

/** The model as an ONNX ModelProto (validated as decodeModel would validate it: spec, parameter count). */
export function buildOnnxModel(model: Model<Preprocessing>, options: OnnxExportOptions = {}): onnx.IModelProto {
  const spec = model.spec;
  const table = parameterTable(spec);
  const expected = table.reduce((sum, tensor) => sum + tensor.size, 0);
  if (model.parameters.length !== expected) {
    throw new Error(`the model has ${model.parameters.length} parameters, its spec needs ${expected}`);
  }
  const shapes = inferShapes(spec);
  const labels = layerLabels(spec.layers);
  const graph = new GraphBuilder();
  const input = graph.reserve(onnxInputName);
  for (const tensor of table) {
    graph.reserve(tensor.name);
    graph.initializers.push(floatTensor(tensor.name, tensor.shape, model.parameters.subarray(tensor.offset, tensor.offset + tensor.size)));
  }

  let value = addPreprocessing(graph, input, model.preprocessing, spec.input);
  let shape: number[] = [...spec.input];
  const folded = foldedHeadActivation(spec);
  spec.layers.forEach((layer, index) => {
    const isLast = index === spec.layers.length - 1;
    value = layer.kind === 'residual'
      ? addBlock(graph, layer, index, value, shape, shapes[index], labels[index])
      : addLayer(graph, layer, `layers.${index}.`, value, shape, labels[index], layerName(labels[index]), folded && isLast);
    shape = shapes[index].outputShape;
  });
  const width = shape[0];
  const imputation = model.preprocessing.imputation;
  const rawInput = imputation ? [imputation.fill.length] : [...spec.input];
  const target = model.preprocessing.target;
  const output = target ? addRegressionHead(graph, value, target) : addHead(graph, value, spec, width);
  const outputDescription = describeOnnxOutput(spec, target);
  const outputWidth = target ? width : classCount(spec);
  return {
    irVersion: onnxIrVersion,
    opsetImport: [{ domain: '', version: onnxOpsetVersion }],
    producerName: 'NN Studio',
    producerVersion: options.producerVersion ?? '',
    docString: `A model trained in NN Studio. Input "${onnxInputName}": raw values (N, ${rawInput.join(', ')}); ` +
      `output "${output}": ${outputDescription}. Preprocessing: ${describePreprocessing(model.preprocessing)}.`,
    graph: {
      name: options.graphName ?? 'nnstudio_model',
      node: graph.nodes,
      initializer: graph.initializers,
      input: [floatValueInfo(input, ['N', ...rawInput], 'raw values as the data file holds them (NaN where a cell is missing)')],
      output: [floatValueInfo(output, ['N', outputWidth], outputDescription)],
    },
    metadataProps: metadataProps(model),
  };
}

/** The ONNX file's bytes. */
export function encodeOnnxModel(model: Model<Preprocessing>, options: OnnxExportOptions = {}): Uint8Array {
  const proto = buildOnnxModel(model, options);
  const problem = onnx.ModelProto.verify(proto);
  if (problem) throw new Error(`ONNX export: ${problem}`);
  return onnx.ModelProto.encode(proto).finish();
}
