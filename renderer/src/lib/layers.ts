// The model editor's layer list: the layers as objects (what the rows edit) and the compact text the API
// takes (docs/LAYERS.md), plus how the API's per-layer check lines up with the rows.
import type { LayerCheck, ModelSpec } from '../../../app/api/types';
import type { LossName } from '../../../app/core/model/spec';

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

// the names and defaults the model spec validates against, and the compact syntax's writer: app/core's, not copies
export { activationNames, batchnormDefaults, lossNames, paddingNames, regressionLossNames } from '../../../app/core/model/spec';
export type { ActivationName, LossName } from '../../../app/core/model/spec';
export { formatLayer as layerText, formatLayers as layersText } from '../../../app/core/model/layerSyntax';

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
