// The compact `--layers` syntax (docs/LAYERS.md): "conv:8x3:same:relu,maxpool:2,dense:10";
// "conv:16x3:same,batchnorm,relu,gap,dense:10" (batchnorm's options: m0.01 momentum, eps0.001, noaffine);
// a residual block holds its layers in parentheses: "residual(conv:16x3:same:relu,conv:16x3:same)" (or
// "res(...)"); blocks do not nest.
// parseLayers and formatLayers round-trip: parseLayers(formatLayers(layers)) gives the same layers
// once defaults are made explicit (conv stride 1 and padding valid, pool stride = size), which is what
// parseLayers always produces.
import { activationNames, batchnormDefaults, paddingNames } from './spec';
import type { ActivationName, LayerSpec, LossName, PlainLayerSpec } from './spec';

/** Where in the text a layer could not be read, for a face that shows it beside the layer (models:check). */
export interface LayerSyntaxPlace {
  /** The item at fault, 0-based. */
  item: number;
  /** Its kind when the item names one ('dense', 'conv2d', ...). */
  kind?: LayerSpec['kind'];
  /** The reason alone, without the flag and the item ("units \"0\" is not a positive integer"). */
  reason: string;
}

export class LayerSyntaxError extends Error {
  constructor(
    message: string,
    readonly place?: LayerSyntaxPlace,
  ) {
    super(message);
    this.name = 'LayerSyntaxError';
  }
}

/** The kind an item names ("conv:8x3" → conv2d), when its head is a known one. */
function itemKind(item: string): LayerSpec['kind'] | undefined {
  if (blockPattern.test(item.trim())) return 'residual';
  const head = item.split(':')[0].trim().toLowerCase();
  return isActivationName(head) ? 'activation' : kindAliases[head];
}

type Activation = { activation?: ActivationName; alpha?: number };

const kindAliases: Record<
  string,
  'dense' | 'conv2d' | 'maxpool2d' | 'avgpool2d' | 'flatten' | 'dropout' | 'batchnorm' | 'global_avgpool'
> = {
  dense: 'dense',
  conv: 'conv2d',
  conv2d: 'conv2d',
  maxpool: 'maxpool2d',
  maxpool2d: 'maxpool2d',
  avgpool: 'avgpool2d',
  avgpool2d: 'avgpool2d',
  flatten: 'flatten',
  dropout: 'dropout',
  batchnorm: 'batchnorm',
  bn: 'batchnorm',
  gap: 'global_avgpool',
  global_avgpool: 'global_avgpool',
};

const integerPattern = /^[0-9]+$/;
/** "residual(...)" or "res(...)": a block, its items inside the parentheses. */
const blockPattern = /^(residual|res)\s*\(([\s\S]*)\)$/i;
const decimalPattern = /^([0-9]+\.?[0-9]*|\.[0-9]+)(e[+-]?[0-9]+)?$/i;

function isActivationName(token: string): token is ActivationName {
  return (activationNames as readonly string[]).includes(token);
}

// ---- parsing one item ----

// Throws a plain message; parseLayers prefixes it with the item's position and text.
function parseItem(item: string): LayerSpec {
  const block = blockPattern.exec(item.trim());
  if (block) return parseBlock(block[2]);
  if (/[()]/.test(item)) throw new Error('parentheses belong to a residual block, e.g. residual(conv:16x3:same:relu,conv:16x3:same)');
  return parsePlainItem(item);
}

// The items of a residual block, each a plain layer: "its item 2 "conv:3x": ..." names the one at fault.
function parseBlock(inside: string): LayerSpec {
  if (inside.trim() === '') throw new Error('a residual block needs at least one layer, e.g. residual(conv:16x3:same)');
  const layers = splitItems(inside).map((inner, index) => {
    try {
      if (blockPattern.test(inner.trim())) throw new Error('a residual block cannot hold another residual block');
      return parseItem(inner) as PlainLayerSpec;
    } catch (error) {
      throw new Error(`its item ${index + 1} "${inner}": ${(error as Error).message}`);
    }
  });
  return { kind: 'residual', layers };
}

function parsePlainItem(item: string): LayerSpec {
  const tokens = item.split(':').map((token) => token.trim());
  const [head, ...args] = tokens;
  const name = head.toLowerCase();
  if (name === '') throw new Error('empty layer');
  if (integerPattern.test(name)) {
    throw new Error('a bare number is a layer only when every item is a number (the course tool\'s form "30,60,10,1")');
  }

  if (isActivationName(name)) {
    const activation = parseActivation(name, args, 0);
    if (activation.next < args.length) throw new Error(`unexpected "${args[activation.next]}"`);
    const layer: LayerSpec = { kind: 'activation', fn: name };
    if (activation.alpha !== undefined) layer.alpha = activation.alpha;
    return layer;
  }

  const kind = kindAliases[name];
  switch (kind) {
    case 'dense': {
      if (args.length === 0) throw new Error('needs the number of units, e.g. dense:128');
      const units = positiveInteger(args[0], 'units');
      const layer: LayerSpec = { kind: 'dense', units };
      const rest = parseOptions(args.slice(1), { padding: false, stride: false });
      Object.assign(layer, rest.activation);
      return layer;
    }
    case 'conv2d': {
      if (args.length === 0) throw new Error('needs filters and kernel, e.g. conv:32x3 or conv:32x3x5');
      const dims = args[0].split('x');
      if (dims.length < 2 || dims.length > 3 || dims.some((dim) => !integerPattern.test(dim))) {
        throw new Error(`"${args[0]}" is not FILTERSxK or FILTERSxKHxKW, e.g. 32x3 or 32x3x5`);
      }
      const [filters, kh, kw] = dims.map((dim, index) => positiveInteger(dim, ['filters', 'kernel', 'kernel'][index]));
      const rest = parseOptions(args.slice(1), { padding: true, stride: true });
      const layer: LayerSpec = {
        kind: 'conv2d',
        filters,
        kernel: [kh, kw ?? kh],
        stride: rest.stride ?? 1,
        padding: rest.padding ?? 'valid',
      };
      Object.assign(layer, rest.activation);
      return layer;
    }
    case 'maxpool2d':
    case 'avgpool2d': {
      if (args.length === 0) throw new Error(`needs the window size, e.g. ${head}:2`);
      const size = positiveInteger(args[0], 'window size');
      const rest = parseOptions(args.slice(1), { padding: false, stride: true, activation: false });
      return { kind, size, stride: rest.stride ?? size };
    }
    case 'flatten':
      if (args.length > 0) throw new Error('takes no arguments');
      return { kind: 'flatten' };
    case 'dropout': {
      if (args.length !== 1) throw new Error('needs one rate in [0, 1), e.g. dropout:0.5');
      const rate = decimal(args[0], 'rate');
      if (rate >= 1) throw new Error(`rate ${args[0]} must be below 1`);
      return { kind: 'dropout', rate };
    }
    case 'batchnorm':
      return parseBatchnorm(args);
    case 'global_avgpool':
      if (args.length > 0) throw new Error('takes no arguments');
      return { kind: 'global_avgpool' };
    default:
      throw new Error(
        `unknown layer kind "${head}"; known: dense, conv, maxpool, avgpool, flatten, dropout, batchnorm, gap, residual(...), ${activationNames.join(', ')}`,
      );
  }
}

// batchnorm[:m<momentum>][:eps<eps>][:noaffine], each at most once, in any order. Defaults are left out
// of the layer (as formatLayer leaves them out of the text), so the two round-trip.
function parseBatchnorm(args: string[]): LayerSpec {
  let momentum: number | undefined;
  let eps: number | undefined;
  let affine = true;
  for (const arg of args) {
    const token = arg.toLowerCase();
    if (token === 'noaffine') {
      if (!affine) throw new Error('noaffine given twice');
      affine = false;
    } else if (token.startsWith('eps')) {
      if (eps !== undefined) throw new Error('eps given twice');
      eps = decimal(token.slice(3), 'eps');
      if (eps <= 0) throw new Error(`eps "${token.slice(3)}" must be above 0`);
    } else if (token.startsWith('m')) {
      if (momentum !== undefined) throw new Error('momentum given twice');
      momentum = decimal(token.slice(1), 'momentum');
      if (momentum > 1) throw new Error(`momentum "${token.slice(1)}" must be in [0, 1]`);
    } else {
      throw new Error(`unexpected "${arg}" (expected a momentum like m0.01, an eps like eps0.001, or noaffine)`);
    }
  }
  const layer: LayerSpec & { kind: 'batchnorm' } = { kind: 'batchnorm' };
  if (momentum !== undefined && momentum !== batchnormDefaults.momentum) layer.momentum = momentum;
  if (eps !== undefined && eps !== batchnormDefaults.eps) layer.eps = eps;
  if (!affine) layer.affine = false;
  return layer;
}

function positiveInteger(token: string, what: string): number {
  if (!integerPattern.test(token) || Number(token) < 1 || !Number.isSafeInteger(Number(token))) {
    throw new Error(`${what} "${token}" is not a positive integer`);
  }
  return Number(token);
}

function decimal(token: string, what: string): number {
  if (!decimalPattern.test(token)) throw new Error(`${what} "${token}" is not a non-negative number`);
  const value = Number(token);
  if (!Number.isFinite(value)) throw new Error(`${what} "${token}" is not finite`);
  return value;
}

// An activation name at args[index]; for leaky_relu a number right after it is its alpha.
function parseActivation(name: ActivationName, args: string[], index: number): Activation & { next: number } {
  if (name === 'leaky_relu' && index < args.length && decimalPattern.test(args[index])) {
    return { activation: name, alpha: decimal(args[index], 'alpha'), next: index + 1 };
  }
  return { activation: name, next: index };
}

interface Options {
  padding?: 'valid' | 'same' | 'full';
  stride?: number;
  activation: Activation;
}

// The optional tokens after a layer's required argument, in any order, each at most once.
function parseOptions(
  args: string[],
  allowed: { padding: boolean; stride: boolean; activation?: boolean },
): Options {
  const options: Options = { activation: {} };
  for (let index = 0; index < args.length; index++) {
    const token = args[index].toLowerCase();
    if (allowed.padding && (paddingNames as readonly string[]).includes(token)) {
      if (options.padding) throw new Error(`padding given twice ("${options.padding}" and "${token}")`);
      options.padding = token as Options['padding'];
    } else if (allowed.stride && /^s[0-9]+$/.test(token)) {
      if (options.stride !== undefined) throw new Error(`stride given twice`);
      options.stride = positiveInteger(token.slice(1), 'stride');
    } else if (allowed.activation !== false && isActivationName(token)) {
      if (options.activation.activation) throw new Error(`activation given twice`);
      const parsed = parseActivation(token, args, index + 1);
      options.activation = parsed.alpha === undefined ? { activation: token } : { activation: token, alpha: parsed.alpha };
      index = parsed.next - 1;
    } else {
      const expected = [
        allowed.padding ? 'valid|same|full' : '',
        allowed.stride ? 'a stride like s2' : '',
        allowed.activation !== false ? 'an activation' : '',
      ].filter(Boolean);
      throw new Error(`unexpected "${args[index]}" (expected ${expected.join(', ')})`);
    }
  }
  return options;
}

// ---- the whole list ----

// Commas split items outside parentheses only (a block's items stay in their block's item).
function splitItems(text: string): string[] {
  const items: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')') depth--;
    else if (text[i] === ',' && depth === 0) {
      items.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  items.push(text.slice(start).trim());
  return items;
}

/** True when the text is the C course tool's form: integers only, "30,60,10,1". */
export function isCourseLayers(text: string): boolean {
  const items = splitItems(text);
  return items.length >= 2 && items.every((item) => integerPattern.test(item));
}

/**
 * Parses the compact syntax into layers for data of `inputShape` ([F] or [C,H,W]). A flatten is inserted
 * where a dense layer follows an image-shaped tensor. The course tool's form ("784,128,10") is accepted
 * too (see parseCourseLayers); its first number must equal the input's element count.
 * Errors: `--layers: item 3 "conv:3x": "3x" is not FILTERSxK ...` (`source` replaces "--layers").
 */
export function parseLayers(text: string, inputShape: readonly number[], source = '--layers'): LayerSpec[] {
  return parseLayerItems(text, inputShape, source).layers;
}

/**
 * parseLayers, telling also which item of the text each layer came from (`items[i]`, 0-based), or undefined
 * for a flatten it added before a dense layer; the model editor names a layer at fault by its item.
 */
export function parseLayerItems(text: string, inputShape: readonly number[], source = '--layers'): { layers: LayerSpec[]; items: Array<number | undefined> } {
  if (isCourseLayers(text)) {
    const features = inputShape.reduce((product, dim) => product * dim, 1);
    const course = parseCourseLayers(text, features, source);
    const layers: LayerSpec[] = inputShape.length === 3 ? [{ kind: 'flatten' }, ...course.layers] : course.layers;
    return { layers, items: layers.map((_, i) => (inputShape.length === 3 ? (i === 0 ? undefined : i - 1) : i)) };
  }
  if (text.trim() === '') throw new LayerSyntaxError(`${source}: no layers given`);
  const layers: LayerSpec[] = [];
  const items: Array<number | undefined> = [];
  let image = inputShape.length === 3;
  const opens = (text.match(/\(/g) ?? []).length;
  const closes = (text.match(/\)/g) ?? []).length;
  if (opens !== closes) {
    throw new LayerSyntaxError(`${source}: ${opens > closes ? 'a "(" is never closed' : 'a ")" closes nothing'}`);
  }
  splitItems(text).forEach((item, index) => {
    let layer: LayerSpec;
    try {
      layer = parseItem(item);
    } catch (error) {
      const reason = (error as Error).message;
      throw new LayerSyntaxError(`${source}: item ${index + 1} "${item}": ${reason}`, { item: index, kind: itemKind(item), reason });
    }
    if (layer.kind === 'dense' && image) {
      layers.push({ kind: 'flatten' });
      items.push(undefined);
    }
    if (layer.kind === 'dense' || layer.kind === 'flatten' || layer.kind === 'global_avgpool') image = false;
    layers.push(layer);
    items.push(index);
  });
  return { layers, items };
}

function formatNumber(value: number): string {
  return String(value);
}

function formatActivation(layer: Activation): string {
  if (!layer.activation) return '';
  const alpha = layer.activation === 'leaky_relu' && layer.alpha !== undefined ? `:${formatNumber(layer.alpha)}` : '';
  return `:${layer.activation}${alpha}`;
}

/** One layer in the compact syntax; defaults (stride 1, padding valid, pool stride = size) are left out. */
export function formatLayer(layer: LayerSpec): string {
  switch (layer.kind) {
    case 'dense':
      return `dense:${layer.units}${formatActivation(layer)}`;
    case 'conv2d': {
      const [kh, kw] = layer.kernel;
      const kernel = kh === kw ? `${kh}` : `${kh}x${kw}`;
      const padding = layer.padding && layer.padding !== 'valid' ? `:${layer.padding}` : '';
      const stride = layer.stride !== undefined && layer.stride !== 1 ? `:s${layer.stride}` : '';
      return `conv:${layer.filters}x${kernel}${padding}${stride}${formatActivation(layer)}`;
    }
    case 'maxpool2d':
    case 'avgpool2d': {
      const stride = layer.stride !== undefined && layer.stride !== layer.size ? `:s${layer.stride}` : '';
      return `${layer.kind === 'maxpool2d' ? 'maxpool' : 'avgpool'}:${layer.size}${stride}`;
    }
    case 'flatten':
      return 'flatten';
    case 'dropout':
      return `dropout:${formatNumber(layer.rate)}`;
    case 'activation': {
      const alpha = layer.fn === 'leaky_relu' && layer.alpha !== undefined ? `:${formatNumber(layer.alpha)}` : '';
      return `${layer.fn}${alpha}`;
    }
    case 'batchnorm': {
      const momentum =
        layer.momentum !== undefined && layer.momentum !== batchnormDefaults.momentum ? `:m${formatNumber(layer.momentum)}` : '';
      const eps = layer.eps !== undefined && layer.eps !== batchnormDefaults.eps ? `:eps${formatNumber(layer.eps)}` : '';
      return `batchnorm${momentum}${eps}${layer.affine === false ? ':noaffine' : ''}`;
    }
    case 'global_avgpool':
      return 'gap';
    case 'residual':
      return `residual(${layer.layers.map(formatLayer).join(',')})`;
  }
}

/** The whole list, comma-separated. */
export function formatLayers(layers: readonly LayerSpec[]): string {
  return layers.map(formatLayer).join(',');
}

// ---- the C course tool's form ----

export interface CourseLayers {
  /** The first number: the width of one input sample. */
  inputWidth: number;
  /** One sigmoid dense layer per following number. */
  layers: LayerSpec[];
  /** The course tool trains its sigmoid outputs on the quadratic cost. */
  loss: LossName;
}

/**
 * "30,60,10,1": a sigmoid MLP whose first number is the input width and whose following numbers are the
 * layer widths. When `featureCount` is given the input width must equal it.
 */
export function parseCourseLayers(text: string, featureCount?: number, source = '--layers'): CourseLayers {
  const items = splitItems(text);
  if (items.length < 2) {
    throw new LayerSyntaxError(`${source}: "${text}" needs an input width and at least one layer width, e.g. 30,60,10,1`);
  }
  const widths = items.map((item, index) => {
    if (!integerPattern.test(item) || Number(item) < 1) {
      throw new LayerSyntaxError(`${source}: item ${index + 1} "${item}": not a positive integer (the course tool's form is widths only)`);
    }
    return Number(item);
  });
  const [inputWidth, ...layerWidths] = widths;
  if (featureCount !== undefined && inputWidth !== featureCount) {
    throw new LayerSyntaxError(
      `${source}: the first number ${inputWidth} is the input width, but the data has ${featureCount} features`,
    );
  }
  const layers: LayerSpec[] = layerWidths.map((units) => ({ kind: 'dense', units, activation: 'sigmoid' }));
  return { inputWidth, layers, loss: 'mse' };
}
