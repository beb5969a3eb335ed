// DESIGN §2: shape inference lives in TypeScript (app/core) and in C++ (the engine); both must agree on
// output shapes, parameter counts, multiply-adds, the parameter table and on which specs are invalid.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mulberry32 } from '../../../app/core/data/split';
import { listPresets } from '../../../app/core/model/presets';
import * as core from '../../../app/core/model/shapes';
import type { LayerSpec, ModelSpec, PlainLayerSpec } from '../../../app/core/model/spec';
import * as engine from '../../../app/engine';

function coreResult(spec: ModelSpec): { layers?: unknown; table?: unknown; error?: string } {
  try {
    const layers = core.inferShapes(spec).map((layer) => ({ label: layer.label, outputShape: layer.outputShape, parameters: layer.parameters, multiplyAdds: layer.multiplyAdds }));
    return { layers, table: core.parameterTable(spec) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

function engineResult(spec: ModelSpec): { layers?: unknown; table?: unknown; error?: string } {
  try {
    const layers = engine.inferShapes(spec).map((layer) => ({ label: layer.label, outputShape: layer.outputShape, parameters: layer.parameters, multiplyAdds: layer.multiplyAdds }));
    return { layers, table: engine.parameterTable(spec) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

function assertAgree(spec: ModelSpec): 'valid' | 'invalid' {
  const fromCore = coreResult(spec);
  const fromEngine = engineResult(spec);
  const where = JSON.stringify(spec);
  if (fromCore.error !== undefined || fromEngine.error !== undefined) {
    assert.ok(fromCore.error !== undefined, `engine rejects what core accepts: ${fromEngine.error}\n${where}`);
    assert.ok(fromEngine.error !== undefined, `core rejects what engine accepts: ${fromCore.error}\n${where}`);
    assert.equal(fromEngine.error, fromCore.error, where);
    return 'invalid';
  }
  assert.deepEqual(fromEngine, fromCore, where);
  return 'valid';
}

test('every preset: the same shapes, counts and parameter table in TypeScript and C++', () => {
  for (const preset of listPresets()) assert.equal(assertAgree(preset.spec), 'valid', preset.name);
});

// A seeded generator of specs, valid and invalid, over every layer kind and padding.
function randomSpec(random: () => number): ModelSpec {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const int = (low: number, high: number) => low + Math.floor(random() * (high - low + 1));
  const image = random() < 0.75;
  const input: ModelSpec['input'] = image ? [int(1, 3), int(3, 16), int(3, 16)] : [int(1, 40)];
  const layers: LayerSpec[] = [];
  const count = int(1, 5);
  for (let i = 0; i < count; i++) {
    if (random() < 0.15) {
      // a residual block of 1-3 layers: conv2d with padding same keeps the shape more often (identity), a
      // stride or other filters give a projection, anything else may be refused by the shortcut
      const inner: PlainLayerSpec[] = [];
      for (let j = int(1, 3); j > 0; j--) {
        inner.push(random() < 0.5
          ? { kind: 'conv2d', filters: int(1, 4), kernel: [3, 3], stride: pick([1, 1, 2] as const), padding: 'same', activation: pick(['relu', 'linear'] as const) }
          : plainLayer(random));
      }
      layers.push({ kind: 'residual', layers: inner });
      continue;
    }
    layers.push(plainLayer(random));
  }
  if (random() < 0.8) layers.push({ kind: 'flatten' }, { kind: 'dense', units: int(2, 10) });
  return { input, layers, loss: pick(['softmax_cross_entropy', 'mse', 'binary_cross_entropy'] as const), optimizer: { kind: 'sgd', lr: 0.1 }, seed: 0 };
}

function plainLayer(random: () => number): PlainLayerSpec {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const int = (low: number, high: number) => low + Math.floor(random() * (high - low + 1));
  const layers: PlainLayerSpec[] = [];
  {
    const kind = pick(['conv2d', 'maxpool2d', 'avgpool2d', 'flatten', 'dense', 'dropout', 'activation', 'batchnorm', 'global_avgpool'] as const);
    switch (kind) {
      case 'conv2d':
        layers.push({ kind, filters: int(1, 6), kernel: [int(1, 6), int(1, 6)], stride: int(1, 3), padding: pick(['valid', 'same', 'full'] as const), activation: pick(['relu', 'tanh', 'linear'] as const) });
        break;
      case 'maxpool2d':
      case 'avgpool2d':
        layers.push({ kind, size: int(1, 4), stride: int(1, 4) });
        break;
      case 'dense':
        layers.push({ kind, units: int(1, 12), activation: pick(['relu', 'sigmoid', 'softmax'] as const) });
        break;
      case 'dropout':
        layers.push({ kind, rate: 0.25 });
        break;
      case 'activation':
        layers.push({ kind, fn: pick(['relu', 'leaky_relu', 'softplus', 'softmax', 'gelu'] as const) });
        break;
      case 'batchnorm':
        layers.push(random() < 0.5 ? { kind } : { kind, affine: false, momentum: 0.01 });
        break;
      case 'global_avgpool':
        layers.push({ kind });
        break;
      default:
        layers.push({ kind: 'flatten' });
    }
  }
  return layers[0];
}

test('500 random specs: both sides accept the same ones with the same shapes, and reject the rest alike', () => {
  const random = mulberry32(12345);
  const outcomes = { valid: 0, invalid: 0 };
  const blocks = { valid: 0, invalid: 0 };
  for (let i = 0; i < 500; i++) {
    const spec = randomSpec(random);
    const outcome = assertAgree(spec);
    outcomes[outcome]++;
    if (spec.layers.some((layer) => layer.kind === 'residual')) blocks[outcome]++;
  }
  assert.ok(outcomes.valid > 50 && outcomes.invalid > 50, `too one-sided a sample: ${JSON.stringify(outcomes)}`);
  assert.ok(blocks.valid > 10 && blocks.invalid > 10, `too few residual blocks either way: ${JSON.stringify(blocks)}`);
});
