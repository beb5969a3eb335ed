// Shape inference for model specs: output shape, parameters and multiply-adds per layer.
// Mirrors native/include/nnstudio/engine.h (inferShapes, classCount, parameterTable); both sides must
// agree exactly, so every rule here is the engine's rule:
//   conv2d: stride 1 and padding 'valid' by default;
//     valid: out = floor((in - k) / s) + 1, needs k <= in;
//     same (TensorFlow): out = ceil(in / s), any k;
//     full: pads k-1 on each side: out = floor((in + k - 2) / s) + 1.
//   maxpool2d / avgpool2d: floor mode, no padding, stride defaults to size: out = floor((in - size) / s) + 1.
//   flatten keeps C,H,W order; on a flat input it is a no-op. dropout and activation keep the shape.
//   batchnorm keeps the shape; its channels are an image's C or a flat input's features, and its parameters
//   count gamma and beta (when affine) and the running mean and variance (4C or 2C, as Keras counts them:
//   every float of the model's vector). global_avgpool: [C,H,W] -> [C].
//   residual: its layers in turn, plus the shortcut: the identity when they keep the shape, else a 1x1
//   convolution with bias (image to image only) with the smallest stride s where ceil(in / s) = out on
//   both axes; it counts the block's layers' parameters and multiply-adds and the projection's
//   (C_in*C_out + C_out; C_in*C_out*outH*outW). Its layers' errors read
//   "layer 3 (residual), its layer 2 (conv2d): ...".
//   softmax (a layer, or a dense/conv2d activation) needs a flat tensor; no layer may output 2^31
//   elements or more per sample.
//   multiplyAdds per sample, forward: dense inputs*units, conv2d outH*outW*filters*C*kh*kw (padding
//   positions included), every other layer 0 (pools, activations and the bias add are not counted).
import type { LayerKind, LayerSpec, ModelSpec, PlainLayerSpec, ResidualLayerSpec } from './spec';

/** An invalid model spec; the message names the layer at fault, e.g. "conv2d #2: kernel 5x5 larger than input 4x4 (padding valid)". */
export class SpecError extends Error {
  /** Index into spec.layers of the layer at fault; undefined for problems of the whole spec (the loss). */
  readonly layerIndex: number | undefined;
  /** Inside a residual block: the index of its layer at fault (undefined: the block itself, or no block). */
  readonly innerIndex: number | undefined;
  constructor(message: string, layerIndex?: number, innerIndex?: number) {
    super(message);
    this.name = 'SpecError';
    this.layerIndex = layerIndex;
    this.innerIndex = innerIndex;
  }
}

export interface LayerInfo {
  /** "conv2d #1": the kind and its 1-based position among the layers of that kind. */
  label: string;
  kind: LayerKind;
  /** Per sample: [C,H,W] or [F]. */
  outputShape: number[];
  parameters: number;
  /** Per sample, forward pass. */
  multiplyAdds: number;
  /** A residual block: its layers (labelled "layer 3 (residual), its layer 2 (conv2d)") and its shortcut. */
  block?: { layers: LayerInfo[]; shortcut: { kind: 'identity' } | { kind: 'projection'; stride: number; parameters: number } };
}

export interface ParamTensor {
  /** "layers.3.weight" */
  name: string;
  shape: number[];
  /** In floats, into the flat parameter vector. */
  offset: number;
  size: number;
}

/** What shape inference got through before the first error: for the model editor, which shows both. */
export interface ShapeReport {
  layers: LayerInfo[];
  error?: SpecError;
}

// ---- helpers ----

/** "4x7x7" for [4,7,7], "20" for [20]. */
export function formatShape(shape: readonly number[]): string {
  return shape.join('x');
}

export function elementCount(shape: readonly number[]): number {
  return shape.reduce((product, dim) => product * dim, 1);
}

/** Labels of every layer, "dense #1", "conv2d #2", counted per kind in spec order. */
export function layerLabels(layers: readonly LayerSpec[]): string[] {
  const seen = new Map<string, number>();
  return layers.map((layer) => {
    const ordinal = (seen.get(layer.kind) ?? 0) + 1;
    seen.set(layer.kind, ordinal);
    return `${layer.kind} #${ordinal}`;
  });
}

function convOutputSize(input: number, kernel: number, stride: number, padding: 'valid' | 'same' | 'full'): number {
  switch (padding) {
    case 'valid':
      return Math.floor((input - kernel) / stride) + 1;
    case 'same':
      return Math.ceil(input / stride);
    case 'full':
      return Math.floor((input + kernel - 2) / stride) + 1;
  }
}

// ---- per layer ----

// The engine refuses an input or a layer output of 2^31 elements or more (per sample), and a layer of 2^31
// parameters or more.
const maxLayerElements = 2 ** 31;

function inferLayer(layer: LayerSpec, label: string, input: number[], index = 0): LayerInfo {
  const fail = (reason: string): never => {
    throw new SpecError(`${label}: ${reason}`);
  };
  const info = layer.kind === 'residual' ? inferBlock(layer, label, input, index, fail) : computeLayer(layer, input, fail, label);
  const softmax = layer.kind === 'activation' ? layer.fn === 'softmax' : 'activation' in layer && layer.activation === 'softmax';
  if (softmax && info.outputShape.length !== 1) {
    fail(`softmax needs a flat input, got ${formatShape(info.outputShape)} (add a flatten layer first)`);
  }
  if (info.parameters >= maxLayerElements) fail(`${info.parameters} parameters is too many (2^31 or more in one layer)`);
  if (elementCount(info.outputShape) >= maxLayerElements) fail(`output ${formatShape(info.outputShape)} is too large`);
  return info;
}

/** "layer 3 (residual), its layer 2 (conv2d)": a block's layer, as errors and the editor name it. */
export function innerLayerLabel(blockIndex: number, innerIndex: number, kind: LayerKind): string {
  return `layer ${blockIndex + 1} (residual), its layer ${innerIndex + 1} (${kind})`;
}

// A residual block: its layers in turn (an error names the one at fault), then the shortcut.
function inferBlock(block: ResidualLayerSpec, label: string, input: number[], index: number, fail: (reason: string) => never): LayerInfo {
  const layers: LayerInfo[] = [];
  let shape = input;
  block.layers.forEach((layer, j) => {
    try {
      const info = inferLayer(layer, innerLayerLabel(index, j, layer.kind), shape);
      layers.push(info);
      shape = info.outputShape;
    } catch (error) {
      if (error instanceof SpecError) throw new SpecError(error.message, index, j);
      throw error;
    }
  });
  let shortcut: NonNullable<LayerInfo['block']>['shortcut'] = { kind: 'identity' };
  if (formatShape(shape) !== formatShape(input) || shape.length !== input.length) {
    const stride = projectionStride(input, shape, fail);
    const parameters = input[0] * shape[0] + shape[0];
    shortcut = { kind: 'projection', stride, parameters };
  }
  const projection = shortcut.kind === 'projection' ? shortcut : undefined;
  const parameters = layers.reduce((sum, layer) => sum + layer.parameters, projection?.parameters ?? 0);
  const projectionMultiplyAdds = projection ? input[0] * shape[0] * shape[1] * shape[2] : 0;
  const multiplyAdds = layers.reduce((sum, layer) => sum + layer.multiplyAdds, projectionMultiplyAdds);
  return { label, kind: 'residual', outputShape: [...shape], parameters, multiplyAdds, block: { layers, shortcut } };
}

/** The stride of a block's 1x1 projection: the smallest s with ceil(in / s) = out on both axes. */
function projectionStride(input: number[], output: number[], fail: (reason: string) => never): number {
  const turn = `its layers turn ${formatShape(input)} into ${formatShape(output)}`;
  if (input.length !== 3 || output.length !== 3) {
    fail(`${turn}: a shortcut that changes the shape needs an image on both sides (a flat block must keep its width)`);
  }
  for (let s = 1; s <= Math.max(input[1], input[2]); s++) {
    if (Math.ceil(input[1] / s) === output[1] && Math.ceil(input[2] / s) === output[2]) return s;
  }
  return fail(`${turn}: no stride of a 1x1 convolution maps ${input[1]}x${input[2]} to ${output[1]}x${output[2]}`);
}

function computeLayer(layer: PlainLayerSpec, input: number[], fail: (reason: string) => never, label: string): LayerInfo {
  const needsImage = (): [number, number, number] => {
    if (input.length !== 3) fail(`needs an image input [C,H,W], got ${formatShape(input)} (use it before flatten/dense)`);
    return [input[0], input[1], input[2]];
  };
  const info = (outputShape: number[], parameters = 0, multiplyAdds = 0): LayerInfo => ({
    label,
    kind: layer.kind,
    outputShape,
    parameters,
    multiplyAdds,
  });

  switch (layer.kind) {
    case 'dense': {
      if (input.length !== 1) fail(`needs a flat input, got ${formatShape(input)} (add a flatten layer)`);
      const inputs = input[0];
      return info([layer.units], layer.units * inputs + layer.units, inputs * layer.units);
    }
    case 'conv2d': {
      const [channels, height, width] = needsImage();
      const [kh, kw] = layer.kernel;
      const stride = layer.stride ?? 1;
      const padding = layer.padding ?? 'valid';
      if (padding === 'valid' && (kh > height || kw > width)) {
        fail(`kernel ${kh}x${kw} larger than input ${height}x${width} (padding valid)`);
      }
      const outH = convOutputSize(height, kh, stride, padding);
      const outW = convOutputSize(width, kw, stride, padding);
      const weights = layer.filters * channels * kh * kw;
      return info([layer.filters, outH, outW], weights + layer.filters, outH * outW * weights);
    }
    case 'maxpool2d':
    case 'avgpool2d': {
      const [channels, height, width] = needsImage();
      const stride = layer.stride ?? layer.size;
      if (layer.size > height || layer.size > width) {
        fail(`window ${layer.size}x${layer.size} larger than input ${height}x${width}`);
      }
      const outH = Math.floor((height - layer.size) / stride) + 1;
      const outW = Math.floor((width - layer.size) / stride) + 1;
      return info([channels, outH, outW]);
    }
    case 'flatten':
      return info([elementCount(input)]);
    case 'dropout':
    case 'activation':
      return info([...input]);
    case 'batchnorm': {
      const channels = input[0];
      return info([...input], (layer.affine === false ? 2 : 4) * channels);
    }
    case 'global_avgpool': {
      const [channels] = needsImage();
      return info([channels]);
    }
  }
}

// ---- whole spec ----

/** Infers every layer until the first error, which it returns rather than throws. */
export function inferShapesPartial(spec: ModelSpec): ShapeReport {
  const labels = layerLabels(spec.layers);
  const layers: LayerInfo[] = [];
  let shape: number[] = [...spec.input];
  if (elementCount(shape) >= maxLayerElements) {
    return { layers, error: new SpecError(`input: ${formatShape(shape)} is too large (2^31 values or more per sample)`) };
  }
  for (let index = 0; index < spec.layers.length; index++) {
    try {
      const info = inferLayer(spec.layers[index], labels[index], shape, index);
      layers.push(info);
      shape = info.outputShape;
    } catch (error) {
      if (!(error instanceof SpecError)) throw error;
      return { layers, error: new SpecError(error.message, index, error.innerIndex) };
    }
  }
  const error = checkHead(spec, layers);
  return error ? { layers, error } : { layers };
}

// The head must be flat (the loss and the predictions read one vector per sample), and the loss must fit it.
function checkHead(spec: ModelSpec, layers: LayerInfo[]): SpecError | undefined {
  const last = layers[layers.length - 1];
  const lastIndex = layers.length - 1;
  if (last.outputShape.length !== 1) {
    return new SpecError(
      `${last.label}: the network must end with a flat output, got ${formatShape(last.outputShape)} ` +
        '(end with flatten and a dense layer)',
      lastIndex,
    );
  }
  const width = last.outputShape[0];
  if (spec.task === 'regression' && spec.loss !== 'mse' && spec.loss !== 'mae' && spec.loss !== 'huber') {
    return new SpecError(`a regression needs loss mse, mae or huber, got "${spec.loss}"`);
  }
  if (spec.loss === 'softmax_cross_entropy' && width < 2) {
    return new SpecError(
      `softmax_cross_entropy needs at least 2 outputs, the last layer ${last.label} has ${width} ` +
        '(use binary_cross_entropy for a single output)',
    );
  }
  return undefined;
}

/** The head's width: the number of outputs per sample (a regression's target columns). */
export function outputWidth(spec: ModelSpec): number {
  const layers = inferShapes(spec);
  return layers[layers.length - 1].outputShape[0];
}

/** Output shape, parameters and multiply-adds of every layer; throws SpecError at the first invalid layer. */
export function inferShapes(spec: ModelSpec): LayerInfo[] {
  const report = inferShapesPartial(spec);
  if (report.error) throw report.error;
  return report.layers;
}

/**
 * Number of classes the head predicts: the last layer's width, or 2 for a single output unit; 0 for a
 * regression (its head predicts numbers, one per target column: see outputWidth).
 */
export function classCount(spec: ModelSpec): number {
  const layers = inferShapes(spec);
  if (spec.task === 'regression') return 0;
  const width = layers[layers.length - 1].outputShape[0];
  return width === 1 ? 2 : width;
}

/**
 * All tensors of the model in spec order, weight before bias, with offsets into one flat vector. batchnorm:
 * layers.<i>.gamma and layers.<i>.beta (when affine, trained), layers.<i>.running_mean and
 * layers.<i>.running_var (buffers that training forward passes update; never trained).
 */
export function parameterTable(spec: ModelSpec): ParamTensor[] {
  const layers = inferShapes(spec);
  const table: ParamTensor[] = [];
  let offset = 0;
  const add = (name: string, shape: number[]) => {
    const size = elementCount(shape);
    table.push({ name, shape, offset, size });
    offset += size;
  };
  // one layer's tensors under `prefix` ("layers.3." or "layers.3.layers.1."), its input shape given
  const addLayer = (layer: PlainLayerSpec, prefix: string, inputShape: number[]) => {
    if (layer.kind === 'dense') {
      add(`${prefix}weight`, [layer.units, inputShape[0]]);
      add(`${prefix}bias`, [layer.units]);
    } else if (layer.kind === 'conv2d') {
      add(`${prefix}weight`, [layer.filters, inputShape[0], layer.kernel[0], layer.kernel[1]]);
      add(`${prefix}bias`, [layer.filters]);
    } else if (layer.kind === 'batchnorm') {
      const channels = inputShape[0];
      if (layer.affine !== false) {
        add(`${prefix}gamma`, [channels]);
        add(`${prefix}beta`, [channels]);
      }
      add(`${prefix}running_mean`, [channels]);
      add(`${prefix}running_var`, [channels]);
    }
  };
  let inputShape: number[] = [...spec.input];
  spec.layers.forEach((layer, index) => {
    const info = layers[index];
    if (layer.kind === 'residual' && info.block) {
      let innerShape = inputShape;
      layer.layers.forEach((inner, j) => {
        addLayer(inner, `layers.${index}.layers.${j}.`, innerShape);
        innerShape = info.block!.layers[j].outputShape;
      });
      if (info.block.shortcut.kind === 'projection') {
        add(`layers.${index}.shortcut.weight`, [info.outputShape[0], inputShape[0], 1, 1]);
        add(`layers.${index}.shortcut.bias`, [info.outputShape[0]]);
      }
    } else if (layer.kind !== 'residual') {
      addLayer(layer, `layers.${index}.`, inputShape);
    }
    inputShape = info.outputShape;
  });
  return table;
}

/** Total number of floats in the model's vector (batchnorm's running statistics included). */
export function parameterCount(spec: ModelSpec): number {
  return inferShapes(spec).reduce((total, layer) => total + layer.parameters, 0);
}
