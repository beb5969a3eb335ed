// What the model editor shows for a model choice (services/modelSpecs checkModelChoice): types only, shared by
// the service and the UI contract (app/api/types.ts), so the renderer needs nothing of Node for them.
import type { LayerSpec, ModelSpec } from './spec';

/** One row of the model editor's table: the shapes where inference got that far, the error at its layer. */
export interface LayerCheck {
  /** "conv2d #1" */
  label: string;
  kind: LayerSpec['kind'];
  outputShape?: number[];
  parameters?: number;
  multiplyAdds?: number;
  error?: string;
  /** A residual block: its layers' rows (as far as inference got) and its shortcut. */
  block?: {
    layers: Array<{ kind: LayerSpec['kind']; outputShape: number[]; parameters: number; multiplyAdds: number }>;
    shortcut: { kind: 'identity' } | { kind: 'projection'; stride: number; parameters: number };
  };
}

export interface ModelCheck {
  ok: boolean;
  /** The spec as it would train (absent when the choice itself could not be parsed). */
  spec?: ModelSpec;
  input: number[];
  layers: LayerCheck[];
  /** Of the layers whose shapes are known. */
  totalParameters: number;
  totalMultiplyAdds: number;
  /**
   * The first problem, in the editor's words ("Layer 6 (dense): units must be at least 1"); layerIndex points
   * into layers when it belongs to one layer, itemIndex to the user's layer (0-based, the order of the layers
   * text) also when the text could not be read (layers is then empty).
   */
  error?: { message: string; layerIndex?: number; itemIndex?: number };
}
