import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { benchPresets } from '../../../app/services/bench';

// `nnstudio bench` trains on MNIST: its default list must hold only presets that take 1x28x28 images (a
// colour preset in it stopped the whole run at that preset), and naming another one says why it can't run.
describe('bench configs', () => {
  test('the default on CUDA: every MNIST preset but lenet5, never the colour ResNet', () => {
    const names = benchPresets('cuda').map((preset) => preset.name);
    assert.deepEqual(names, ['fast_mnist', 'keras_cnn', 'mlp', 'resnet_fast', 'resnet_mnist', 'seed000', 'seed001', 'seed001_256', 'seed002']);
  });

  test('the default on the CPU leaves out the GPU-only presets', () => {
    const names = benchPresets('cpu').map((preset) => preset.name);
    assert.deepEqual(names, ['mlp', 'resnet_fast', 'seed000', 'seed001', 'seed002']);
  });

  test('named configs run in the order given; lenet5 may be named', () => {
    assert.deepEqual(benchPresets('cuda', ['seed002', 'lenet5']).map((preset) => preset.name), ['seed002', 'lenet5']);
  });

  test('a preset for other inputs is refused with its shape and MNIST\'s', () => {
    assert.throws(() => benchPresets('cuda', ['resnet_rgb']), /bench config "resnet_rgb" takes 3x32x32 inputs, but the bench trains on MNIST \(1x28x28\); valid: fast_mnist, keras_cnn, lenet5/);
  });

  test('an unknown name lists the valid ones', () => {
    assert.throws(() => benchPresets('cuda', ['resnet']), /unknown bench config "resnet"; valid: fast_mnist, .*seed002$/);
  });
});
