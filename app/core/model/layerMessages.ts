// The model editor's words for a layer at fault: "Layer 6 (dense): units must be at least 1", never the
// command line's `--layers: item 6 "dense:0:relu": units "0" is not a positive integer`. The CLI keeps its own.
import type { LayerSpec } from './spec';

/** What the editor calls each kind of layer. */
export const layerKindTitles: Record<LayerSpec['kind'], string> = {
  dense: 'dense',
  conv2d: 'convolution',
  maxpool2d: 'max pooling',
  avgpool2d: 'average pooling',
  flatten: 'flatten',
  dropout: 'dropout',
  activation: 'activation',
  batchnorm: 'batch normalisation',
  global_avgpool: 'global average pooling',
  residual: 'residual block',
};

/** A parser's reason in plain words: `units "0" is not a positive integer` → "units must be at least 1". */
export function plainReason(reason: string): string {
  const integer = /^(.+?) "(.*)" is not a positive integer$/.exec(reason);
  if (integer) return /^-?\d+$/.test(integer[2]) ? `${integer[1]} must be at least 1` : `${integer[1]} must be a whole number of at least 1`;
  const number = /^(.+?) "(.*)" is not a non-negative number$/.exec(reason);
  if (number) return `${number[1]} must be a number of at least 0`;
  // The editor has separate fields for a convolution's filters and kernel; the text joins them as 32x3.
  if (/^".*" is not FILTERSxK or FILTERSxKHxKW/.test(reason)) return 'filters and kernel size must be whole numbers of at least 1';
  const below = /^(\w+) \S+ must be below (\S+)$/.exec(reason);
  if (below) return `${below[1]} must be below ${below[2]}`;
  return reason;
}

/**
 * "Layer 6 (dense): units must be at least 1" for the user's layer `item` (0-based); a flatten the model
 * added by itself (item undefined) is named by the layer it precedes.
 */
export function layerProblem(item: number | undefined, kind: LayerSpec['kind'] | undefined, reason: string, nextItem?: number): string {
  const plain = plainReason(reason);
  if (item === undefined) return `The flatten added before layer ${(nextItem ?? 0) + 1}: ${plain}`;
  return `Layer ${item + 1}${kind ? ` (${layerKindTitles[kind]})` : ''}: ${plain}`;
}
