// The C course tool's plain-text model file, `model.m` (docs/FILE_FORMAT.md "The course tool's model.m"):
// a sigmoid MLP as whitespace-separated numbers: the layer count L (the input layer included), the L
// layer widths, then the biases of layers 1..L-1, then their weights, each layer's as n_l rows of
// n_(l-1) values (row j: the weights into unit j, the (units, inputs) layout of our dense layers).
// Line breaks carry no meaning; they are only counted, so that an error names the line at fault.
import type { Preprocessing } from '../data/preprocess';
import type { Model } from '../model/modelFile';
import type { LayerSpec, ModelSpec } from '../model/spec';

/** A model.m that cannot be read; the message names the file and the line. */
export class CourseModelError extends Error {
  readonly file: string;
  readonly line: number | undefined;
  constructor(file: string, message: string, line?: number) {
    super(line === undefined ? `${file}: ${message}` : `${file}: line ${line}: ${message}`);
    this.name = 'CourseModelError';
    this.file = file;
    this.line = line;
  }
}

export interface CourseNetwork {
  /** Layer widths, the input first: [30, 60, 10, 1]. */
  widths: number[];
  /** biases[l]: the n_(l+1) biases of layer l+1. */
  biases: Float64Array[];
  /** weights[l]: (n_(l+1), n_l) row-major. */
  weights: Float64Array[];
}

interface Token {
  text: string;
  line: number;
}

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  text.split(/\r\n|\r|\n/).forEach((content, index) => {
    for (const word of content.split(/[\s]+/)) if (word !== '') tokens.push({ text: word, line: index + 1 });
  });
  return tokens;
}

/** A token for a message: quoted, control characters escaped, a long one cut. */
function tokenForMessage(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}

// C's printf and strtod forms: 0.5, -1, 1e-05, .25, 3.; no hex, no inf or nan. Unambiguous (each digit can
// match one way only), so a 70 000-digit token fails in linear time, not quadratic.
const numberPattern = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
const maxWidth = 1 << 24;
const maxParameters = 1 << 28;

/** The name of the value at `index` in the order of the file: the biases of layers 1..L-1, then their weights. */
function valueName(widths: readonly number[], index: number): string {
  let rest = index;
  for (let l = 1; l < widths.length; l++) {
    if (rest < widths[l]) return `bias ${rest + 1} of ${widths[l]} of layer ${l}`;
    rest -= widths[l];
  }
  for (let l = 1; l < widths.length; l++) {
    const inputs = widths[l - 1];
    if (rest < widths[l] * inputs) return `weight ${(rest % inputs) + 1} of ${inputs} into unit ${Math.floor(rest / inputs) + 1} of layer ${l}`;
    rest -= widths[l] * inputs;
  }
  return 'the end';
}

/** Parses a model.m text. Errors are CourseModelError naming `file` and, where one is at fault, the line. */
export function parseCourseModel(text: string, file: string): CourseNetwork {
  if (text.includes('\u0000')) throw new CourseModelError(file, 'not a text file (it holds NUL bytes): a model.m file is plain numbers');
  const tokens = tokenize(text);
  let position = 0;
  const lastLine = text.split(/\r\n|\r|\n/).length;
  const next = (what: string): Token => {
    const token = tokens[position++];
    if (token === undefined) {
      throw new CourseModelError(file, `the file ends before ${what}: file truncated?`, tokens.length > 0 ? tokens[tokens.length - 1].line : lastLine);
    }
    return token;
  };
  const integer = (what: string, min: number, max: number): number => {
    const token = next(what);
    const value = Number(token.text);
    if (!/^\+?\d+$/.test(token.text) || value < min || value > max) {
      throw new CourseModelError(file, `${what} must be an integer from ${min} to ${max}, got ${tokenForMessage(token.text)}`, token.line);
    }
    return value;
  };
  const real = (what: string): number => {
    const token = next(what);
    const value = Number(token.text);
    if (!numberPattern.test(token.text) || !Number.isFinite(value)) {
      throw new CourseModelError(file, `${what} must be a finite number, got ${tokenForMessage(token.text)}`, token.line);
    }
    return value;
  };

  const layerCount = integer('the layer count (the input layer included)', 2, 1000);
  const widths: number[] = [];
  for (let l = 0; l < layerCount; l++) {
    widths.push(integer(l === 0 ? 'the input width (size 1)' : `the width of layer ${l} (size ${l + 1})`, 1, maxWidth));
  }
  let parameters = 0;
  for (let l = 1; l < layerCount; l++) parameters += widths[l] * (widths[l - 1] + 1);
  if (parameters > maxParameters) throw new CourseModelError(file, `${parameters} parameters is more than NN Studio reads from a model.m (${maxParameters})`);
  // Before allocating anything the sizes imply: a damaged width must not reserve gigabytes for a short file.
  const remaining = tokens.length - position;
  if (remaining < parameters) {
    const last = tokens.length > 0 ? tokens[tokens.length - 1].line : lastLine;
    throw new CourseModelError(file, `the file ends before ${valueName(widths, remaining)}: file truncated?`, last);
  }

  const biases: Float64Array[] = [];
  for (let l = 1; l < layerCount; l++) {
    const values = new Float64Array(widths[l]);
    for (let j = 0; j < widths[l]; j++) values[j] = real(`bias ${j + 1} of ${widths[l]} of layer ${l}`);
    biases.push(values);
  }
  const weights: Float64Array[] = [];
  for (let l = 1; l < layerCount; l++) {
    const inputs = widths[l - 1];
    const values = new Float64Array(widths[l] * inputs);
    for (let j = 0; j < widths[l]; j++) {
      for (let k = 0; k < inputs; k++) values[j * inputs + k] = real(`weight ${k + 1} of ${inputs} into unit ${j + 1} of layer ${l}`);
    }
    weights.push(values);
  }
  if (position < tokens.length) {
    const extra = tokens[position];
    throw new CourseModelError(file, `unexpected ${tokenForMessage(extra.text)} after the last weight (${tokens.length - position} extra values): the sizes do not match the numbers that follow`, extra.line);
  }
  return { widths, biases, weights };
}

/** The course tool's network as a spec: dense sigmoid layers, quadratic cost, SGD (its training). */
export function courseSpec(widths: readonly number[]): ModelSpec {
  const layers: LayerSpec[] = widths.slice(1).map((units) => ({ kind: 'dense', units, activation: 'sigmoid' }));
  return { input: [widths[0]], layers, loss: 'mse', optimizer: { kind: 'sgd', lr: 0.01 }, seed: 0 };
}

/** Class names for a head of `outputs` units: 0..K-1 (one output: 0 and 1, the label it was trained on). */
export function defaultCourseLabels(outputs: number): string[] {
  return Array.from({ length: outputs === 1 ? 2 : outputs }, (_, i) => String(i));
}

export interface CourseImportOptions {
  /** Class names; default defaultCourseLabels. */
  labels?: string[];
  featureNames?: string[];
}

/** An NN Studio model (parameters in parameterTable order, no preprocessing) from a parsed model.m. */
export function courseNetworkToModel(network: CourseNetwork, file: string, options: CourseImportOptions = {}) {
  const spec = courseSpec(network.widths);
  const outputs = network.widths[network.widths.length - 1];
  const labels = options.labels ?? defaultCourseLabels(outputs);
  const classes = outputs === 1 ? 2 : outputs;
  if (labels.length !== classes) throw new CourseModelError(file, `${labels.length} class labels given, the network predicts ${classes} classes`);
  const featureNames = options.featureNames ?? [];
  if (featureNames.length !== 0 && featureNames.length !== network.widths[0]) {
    throw new CourseModelError(file, `${featureNames.length} feature names given, the network takes ${network.widths[0]} inputs`);
  }
  const size = network.weights.reduce((sum, w, l) => sum + w.length + network.biases[l].length, 0);
  const parameters = new Float32Array(size);
  let offset = 0;
  network.weights.forEach((weights, l) => {
    parameters.set(weights, offset);
    offset += weights.length;
    parameters.set(network.biases[l], offset);
    offset += network.biases[l].length;
  });
  for (let i = 0; i < parameters.length; i++) {
    if (!Number.isFinite(parameters[i])) throw new CourseModelError(file, `a value is too large for 32-bit floats (${parameters.length} parameters, index ${i})`);
  }
  const model: Model<Preprocessing> = {
    spec,
    parameters,
    labels,
    featureNames,
    inputShape: [network.widths[0]],
    preprocessing: { kind: 'none', featureCount: network.widths[0] },
  };
  return model;
}

/** Why a model cannot be written as a model.m, or undefined when it can. */
export function courseIncompatibility(model: Model<Preprocessing>): string | undefined {
  const { spec } = model;
  if (spec.input.length !== 1) return `model.m holds flat inputs only, this model takes ${spec.input.join('x')} images`;
  const bad = spec.layers.findIndex((layer) => layer.kind !== 'dense' || layer.activation !== 'sigmoid');
  if (bad >= 0) return `model.m holds dense sigmoid layers only; layer ${bad + 1} is ${spec.layers[bad].kind}${spec.layers[bad].kind === 'dense' ? ` with ${(spec.layers[bad] as { activation?: string }).activation ?? 'no'} activation` : ''}`;
  if (spec.loss === 'softmax_cross_entropy' || spec.loss === 'binary_cross_entropy') {
    return `model.m's outputs are sigmoids read as they are; this model's ${spec.loss} head would read differently`;
  }
  if (model.preprocessing.kind !== 'none' || model.preprocessing.pixelScale !== undefined) {
    return `model.m has no preprocessing; this model normalises its inputs (${model.preprocessing.kind})`;
  }
  return undefined;
}

// Shortest text that reads back to the same float32.
function formatFloat(value: number): string {
  for (let digits = 6; digits <= 9; digits++) {
    const text = value.toPrecision(digits);
    if (Math.fround(Number(text)) === value) return String(Number(text));
  }
  return String(value);
}

/** A model.m text of a dense sigmoid MLP (see courseIncompatibility), one layer's values per line. */
export function formatCourseModel(model: Model<Preprocessing>): string {
  const problem = courseIncompatibility(model);
  if (problem) throw new Error(problem);
  const widths = [model.spec.input[0], ...model.spec.layers.map((layer) => (layer as { units: number }).units)];
  const lines = [String(widths.length), widths.join(' ')];
  const biasLines: string[] = [];
  const weightLines: string[] = [];
  let offset = 0;
  for (let l = 1; l < widths.length; l++) {
    const inputs = widths[l - 1];
    for (let j = 0; j < widths[l]; j++) {
      weightLines.push(Array.from(model.parameters.subarray(offset + j * inputs, offset + (j + 1) * inputs), formatFloat).join(' '));
    }
    offset += widths[l] * inputs;
    biasLines.push(Array.from(model.parameters.subarray(offset, offset + widths[l]), formatFloat).join(' '));
    offset += widths[l];
  }
  return `${[...lines, ...biasLines, ...weightLines].join('\n')}\n`;
}
