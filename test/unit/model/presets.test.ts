import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findPresetsDir, getPreset, isImagePreset, listPresets, presetForData } from '../../../app/core/model/presets';
import { SpecError, inferShapes, parameterCount } from '../../../app/core/model/shapes';
import { defaultLayers, defaultSpec, defaultTraining } from '../../../app/core/model/defaults';
import { formatLayers } from '../../../app/core/model/layerSyntax';

const allNames = ['fast_mnist', 'keras_cnn', 'lenet5', 'mlp', 'resnet_fast', 'resnet_mnist', 'resnet_rgb', 'seed000', 'seed001', 'seed001_256', 'seed002'];

describe('presets', () => {
  test('found by walking up from the compiled file, sorted by name, all valid', () => {
    const dir = findPresetsDir();
    assert.ok(fs.existsSync(path.join(dir, 'seed000.json')));
    const presets = listPresets();
    assert.deepEqual(presets.map((preset) => preset.name), allNames);
    for (const preset of presets) {
      assert.ok(preset.description.length > 0);
      assert.ok(preset.training.batchSize > 0 && preset.training.epochs > 0);
      assert.doesNotThrow(() => inferShapes(preset.spec));
    }
    assert.equal(getPreset('seed001_256').gpuOnly, true);
    assert.equal(getPreset('seed000').gpuOnly, undefined);
    assert.equal(getPreset('seed002').spec.optimizer.kind, 'adam');
  });

  test('unknown names list the valid ones, each CLI name with its older name', () => {
    const listed = 'fast-mnist (fast_mnist), keras-cnn (keras_cnn), lenet-5 (lenet5), small-mlp (mlp), resnet-fast (resnet_fast), resnet-mnist (resnet_mnist), resnet-rgb (resnet_rgb), tiny-cnn (seed000), ' +
      'one-layer-cnn (seed001), wide-cnn (seed001_256), two-layer-cnn (seed002)';
    assert.throws(() => getPreset('seed999'), { message: `unknown preset "seed999"; valid presets: ${listed}` });
  });

  test('human names and one-line summaries; the CLI name and the seed name find the same preset', () => {
    const presets = listPresets();
    for (const preset of presets) {
      assert.ok(preset.title.length > 0 && !/seed|_/.test(preset.title), `${preset.name}: a title people say ("${preset.title}")`);
      assert.ok(preset.summary.length > 20 && !preset.summary.includes('\n'), `${preset.name}: a one-line summary`);
      assert.equal(getPreset(preset.cliName).name, preset.name);
    }
    assert.equal(new Set(presets.map((preset) => preset.title)).size, presets.length, 'titles are unique');
    assert.equal(getPreset('tiny-cnn').name, 'seed000');
    assert.equal(getPreset('seed001').title, 'One-layer CNN');
    assert.equal(getPreset('Small-MLP').name, 'mlp', 'CLI names ignore case');
  });

  test('callers get copies: mutating one does not change the next', () => {
    const preset = getPreset('mlp');
    preset.spec.layers.length = 0;
    assert.equal(getPreset('mlp').spec.layers.length, 3);
  });

  test('a folder without resources/presets above it is an error naming the start', () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-presets-'));
    try {
      // /tmp has no resources/presets above it (unless someone made one at the root)
      if (!fs.existsSync('/resources/presets')) {
        assert.throws(() => findPresetsDir(tmp), { message: new RegExp(`cannot find resources/presets in ${tmp}`) });
      }
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  test('a malformed preset file is reported with its path', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-presets-'));
    try {
      const good = JSON.parse(fs.readFileSync(path.join(findPresetsDir(), 'mlp.json'), 'utf8'));
      fs.writeFileSync(path.join(dir, 'mlp.json'), JSON.stringify(good));
      assert.deepEqual(listPresets(dir).map((preset) => preset.name), ['mlp']);

      const other = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-presets-'));
      fs.writeFileSync(path.join(other, 'bad.json'), JSON.stringify({ ...good, name: 'bad', spec: { ...good.spec, layers: [{ kind: 'dense', units: 0 }] } }));
      assert.throws(() => listPresets(other), { message: `preset ${path.join(other, 'bad.json')}: invalid model spec at layers.0.units: Too small: expected number to be >0` });
      fs.writeFileSync(path.join(other, 'bad.json'), JSON.stringify({ ...good, name: 'other' }));
      assert.throws(() => listPresets(other), { message: /name "other" differs from the file name "bad"/ });
      fs.rmSync(other, { recursive: true, force: true });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('presetForData', () => {
  test('replaces the input shape and the last dense layer units', () => {
    const preset = getPreset('seed000');
    const spec = presetForData(preset, [3, 32, 32], 5);
    assert.deepEqual(spec.input, [3, 32, 32]);
    const layers = inferShapes(spec);
    // conv same keeps 32x32, maxpool 4 -> 8x8, 4*8*8 = 256 inputs to dense 128
    assert.deepEqual(layers.map((layer) => layer.outputShape), [[4, 32, 32], [4, 32, 32], [4, 8, 8], [256], [128], [5]]);
    assert.equal(layers[0].parameters, 4 * 3 * 2 * 2 + 4);
    assert.equal(layers[4].parameters, 256 * 128 + 128);
    assert.equal(layers[5].parameters, 128 * 5 + 5);
    // the preset itself is unchanged
    assert.deepEqual(getPreset('seed000').spec.input, [1, 28, 28]);
    assert.equal(preset.spec.layers[5].kind === 'dense' && preset.spec.layers[5].units, 10);
  });

  test('an MLP preset on flat data: the flatten becomes a no-op', () => {
    const spec = presetForData(getPreset('mlp'), [20], 3);
    assert.deepEqual(spec.input, [20]);
    assert.equal(parameterCount(spec), 20 * 128 + 128 + 128 * 3 + 3);
  });

  test('an image preset on flat data without an image shape is refused', () => {
    assert.ok(isImagePreset(getPreset('seed000')));
    assert.ok(!isImagePreset(getPreset('mlp')));
    assert.throws(() => presetForData(getPreset('seed000'), [784], 10), (error: unknown) => {
      assert.ok(error instanceof SpecError);
      assert.equal(
        error.message,
        'preset seed000 needs image data [C,H,W], but the data is flat (784 features); give the data an image shape (e.g. 1x28x28) or choose an MLP',
      );
      return true;
    });
  });

  test('images too small for the preset: the shape error, prefixed with preset and data', () => {
    assert.throws(() => presetForData(getPreset('seed002'), [1, 8, 8], 10), {
      name: 'SpecError',
      message: 'preset seed002 on data 1x8x8: conv2d #2: kernel 5x5 larger than input 4x4 (padding valid)',
    });
  });

  test('fewer than 2 classes is refused', () => {
    assert.throws(() => presetForData(getPreset('mlp'), [4], 1), { message: 'preset mlp: the data has only one class; a classifier needs at least two' });
  });
});

describe('defaults', () => {
  test('image data: the small CNN, 105 866 parameters on MNIST', () => {
    const spec = defaultSpec([1, 28, 28], 10);
    assert.equal(formatLayers(spec.layers), 'conv:16x3:same:relu,maxpool:2,conv:32x3:same:relu,maxpool:2,flatten,dense:64:relu,dense:10');
    assert.deepEqual(inferShapes(spec).map((layer) => [layer.outputShape, layer.parameters]), [
      [[16, 28, 28], 160],
      [[16, 14, 14], 0],
      [[32, 14, 14], 4_640],
      [[32, 7, 7], 0],
      [[1_568], 0],
      [[64], 100_416],
      [[10], 650],
    ]);
    assert.equal(parameterCount(spec), 105_866);
    assert.equal(spec.loss, 'softmax_cross_entropy');
    assert.deepEqual(spec.optimizer, { kind: 'adam', lr: 0.001, beta1: 0.9, beta2: 0.999, eps: 1e-7 });
  });

  test('flat data: dense 100 relu, dense K', () => {
    const spec = defaultSpec([4], 3, 7);
    assert.equal(formatLayers(spec.layers), 'dense:100:relu,dense:3');
    assert.equal(parameterCount(spec), 4 * 100 + 100 + 100 * 3 + 3);
    assert.equal(spec.seed, 7);
    assert.deepEqual(spec.input, [4]);
    assert.equal(spec.optimizer.weightDecay, 1e-2, 'the measured weight decay of the default table model');
    assert.equal(defaultSpec([1, 28, 28], 10).optimizer.weightDecay, undefined, 'images keep none');
  });

  test('tiny images: pools are dropped where the image is below 2x2', () => {
    assert.equal(formatLayers(defaultLayers([1, 3, 3], 2)), 'conv:16x3:same:relu,maxpool:2,conv:32x3:same:relu,flatten,dense:64:relu,dense:2');
    assert.equal(formatLayers(defaultLayers([1, 1, 5], 2)), 'conv:16x3:same:relu,conv:32x3:same:relu,flatten,dense:64:relu,dense:2');
    assert.doesNotThrow(() => inferShapes(defaultSpec([1, 3, 3], 2)));
    assert.doesNotThrow(() => inferShapes(defaultSpec([2, 1, 5], 4)));
  });

  test('training options: images 64 x 2 epochs, tabular min(32, n) x 200 epochs', () => {
    assert.deepEqual(defaultTraining([1, 28, 28], 60_000), { batchSize: 64, epochs: 2 });
    assert.deepEqual(defaultTraining([1, 8, 8], 10), { batchSize: 10, epochs: 2 });
    assert.deepEqual(defaultTraining([4], 20), { batchSize: 20, epochs: 200 });
    assert.deepEqual(defaultTraining([30], 10_000), { batchSize: 32, epochs: 200 });
    assert.deepEqual(defaultTraining([30], 0), { batchSize: 1, epochs: 200 });
  });

  test('fewer than 2 classes is refused', () => {
    assert.throws(() => defaultSpec([4], 1), { message: 'the data has only one class; a classifier needs at least two' });
  });
});

describe('the fast_mnist recipe', () => {
  test('carries its one-cycle schedule, batch 256 and one epoch', () => {
    const preset = getPreset('fast_mnist');
    assert.deepEqual(preset.training, {
      batchSize: 256,
      epochs: 1,
      lrSchedule: { kind: 'onecycle', maxLr: 0.01, pctStart: 0.2, divFactor: 20, finalDivFactor: 100 },
    });
    // 0.05: 20 of 20 seeds at 99.0 % or more on the CPU, against 11 of 20 without (docs/BENCHMARKS.md, "Fast MNIST")
    assert.equal(preset.spec.labelSmoothing, 0.05);
    assert.equal(preset.gpuOnly, true);
  });

  test('training with the preset uses its schedule unless the request picks one', async () => {
    // Imported here: the services load the native engine.
    const { services } = await import('../../../app/services');
    const data = { kind: 'mnist', split: 'train', limit: 300 } as const;
    const run = (lrSchedule?: { kind: 'constant' }) =>
      services.training.train({ data, model: { preset: 'fast_mnist' }, epochs: 1, batchSize: 64, valSplit: 0, device: 'cpu', threads: 1, ...(lrSchedule ? { lrSchedule } : {}) });
    const recipe = await run();
    assert.deepEqual(recipe.model.training?.options.lrSchedule, getPreset('fast_mnist').training.lrSchedule);
    const constant = await run({ kind: 'constant' });
    assert.deepEqual(constant.model.training?.options.lrSchedule, { kind: 'constant' });
    assert.notDeepEqual(Array.from(recipe.model.parameters.slice(0, 50)), Array.from(constant.model.parameters.slice(0, 50)), 'the schedule changed the steps');
  });
});
