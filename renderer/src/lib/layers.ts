// The model editor's layer list: the layers as objects (what the rows edit) and the compact text the API
// takes (docs/LAYERS.md), plus how the API's per-layer check lines up with the rows.
import type { LayerCheck, ModelSpec } from '../../../app/api/types';

export type LayerSpec = ModelSpec['layers'][number];
export type LayerKind = LayerSpec['kind'];
/** A layer that may sit inside a residual block (blocks do not nest). */
export type PlainLayerSpec = Exclude<LayerSpec, { kind: 'residual' }>;
export type PlainLayerKind = PlainLayerSpec['kind'];

export const layerKinds: { kind: LayerKind; title: string }[] = [
  { kind: 'dense', title: 'Dense' },
  { kind: 'conv2d', title: 'Convolution' },
  { kind: 'maxpool2d', title: 'Max pooling' },
  { kind: 'avgpool2d', title: 'Average pooling' },
  { kind: 'flatten', title: 'Flatten' },
  { kind: 'dropout', title: 'Dropout' },
  { kind: 'activation', title: 'Activation' },
  { kind: 'batchnorm', title: 'Batch normalisation' },
  // shorter than its full name: the kind choices are as wide as the longest title, in a table that fits 1024 px
  { kind: 'global_avgpool', title: 'Global avg. pooling' },
  { kind: 'residual', title: 'Residual block' },
];
/** The kinds a residual block's layers may have. */
export const plainLayerKinds = layerKinds.filter((option) => option.kind !== 'residual') as { kind: PlainLayerKind; title: string }[];

/** batchnorm's defaults (PyTorch's), as app/core/model/spec.ts has them. */
export const batchnormDefaults = { momentum: 0.1, eps: 1e-5 } as const;

export const activationNames = ['linear', 'relu', 'leaky_relu', 'sigmoid', 'tanh', 'softplus', 'softmax', 'gelu'] as const;
export type ActivationName = (typeof activationNames)[number];
export const paddingNames = ['valid', 'same', 'full'] as const;
export const lossNames = ['softmax_cross_entropy', 'binary_cross_entropy', 'mse', 'mae', 'huber'] as const;
export const regressionLossNames = ['mse', 'mae', 'huber'] as const;
export type LossName = (typeof lossNames)[number];

export const lossTitles: Record<LossName, string> = {
  softmax_cross_entropy: 'Softmax cross-entropy',
  binary_cross_entropy: 'Binary cross-entropy',
  mse: 'Mean squared error',
  mae: 'Mean absolute error',
  huber: 'Huber (squared up to 1, then linear)',
};

/** A new layer of a kind, with sensible values to start from (a block: two convolutions that keep the shape). */
export function newLayer(kind: LayerKind): LayerSpec {
  if (kind === 'residual') {
    return { kind, layers: [newPlainLayer('conv2d'), { kind: 'conv2d', filters: 16, kernel: [3, 3], stride: 1, padding: 'same' }] };
  }
  return newPlainLayer(kind);
}

export function newPlainLayer(kind: PlainLayerKind): PlainLayerSpec {
  switch (kind) {
    case 'dense':
      return { kind, units: 64, activation: 'relu' };
    case 'conv2d':
      return { kind, filters: 16, kernel: [3, 3], stride: 1, padding: 'same', activation: 'relu' };
    case 'maxpool2d':
    case 'avgpool2d':
      return { kind, size: 2, stride: 2 };
    case 'flatten':
      return { kind };
    case 'dropout':
      return { kind, rate: 0.25 };
    case 'activation':
      return { kind, fn: 'relu' };
    case 'batchnorm':
    case 'global_avgpool':
      return { kind };
  }
}

function activationText(activation: ActivationName | undefined, alpha: number | undefined): string {
  if (!activation) return '';
  return activation === 'leaky_relu' && alpha !== undefined ? `:${activation}:${alpha}` : `:${activation}`;
}

/** One layer in the compact syntax (the same text `nnstudio train --layers` takes). */
export function layerText(layer: LayerSpec): string {
  switch (layer.kind) {
    case 'dense':
      return `dense:${layer.units}${activationText(layer.activation, layer.alpha)}`;
    case 'conv2d': {
      const [kh, kw] = layer.kernel;
      const kernel = kh === kw ? `${kh}` : `${kh}x${kw}`;
      const padding = layer.padding && layer.padding !== 'valid' ? `:${layer.padding}` : '';
      const stride = layer.stride !== undefined && layer.stride !== 1 ? `:s${layer.stride}` : '';
      return `conv:${layer.filters}x${kernel}${padding}${stride}${activationText(layer.activation, layer.alpha)}`;
    }
    case 'maxpool2d':
    case 'avgpool2d': {
      const stride = layer.stride !== undefined && layer.stride !== layer.size ? `:s${layer.stride}` : '';
      return `${layer.kind === 'maxpool2d' ? 'maxpool' : 'avgpool'}:${layer.size}${stride}`;
    }
    case 'flatten':
      return 'flatten';
    case 'dropout':
      return `dropout:${layer.rate}`;
    case 'activation':
      return layer.fn === 'leaky_relu' && layer.alpha !== undefined ? `${layer.fn}:${layer.alpha}` : layer.fn;
    case 'batchnorm': {
      const momentum =
        layer.momentum !== undefined && layer.momentum !== batchnormDefaults.momentum ? `:m${layer.momentum}` : '';
      const eps = layer.eps !== undefined && layer.eps !== batchnormDefaults.eps ? `:eps${layer.eps}` : '';
      return `batchnorm${momentum}${eps}${layer.affine === false ? ':noaffine' : ''}`;
    }
    case 'global_avgpool':
      return 'gap';
    case 'residual':
      return `residual(${layer.layers.map(layerText).join(',')})`;
  }
}

export function layersText(layers: readonly LayerSpec[]): string {
  return layers.map(layerText).join(',');
}

/** A row of the editor: one of the user's layers, or a flatten the API inserted before a dense layer. */
export interface LayerRowModel {
  index?: number;
  check?: LayerCheck;
}

/** Lines the check's layers up with the user's: an inserted flatten gets a row of its own. */
export function alignRows(layers: readonly LayerSpec[], checks: readonly LayerCheck[]): LayerRowModel[] {
  const rows: LayerRowModel[] = [];
  let at = 0;
  for (let index = 0; index < layers.length; index += 1) {
    while (at < checks.length && checks[at].kind === 'flatten' && layers[index].kind !== 'flatten') {
      rows.push({ check: checks[at] });
      at += 1;
    }
    rows.push({ index, check: checks[at] });
    at += 1;
  }
  return rows;
}
