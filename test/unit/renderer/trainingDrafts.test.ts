// The Model screen's training settings adopt a preset's whole recipe, as models:presets gives it: the
// schedule and, for the ResNets, the augmentation, so that what the fields show is what training:start sends
// (the editor sends layers, not the preset's name, so the server adds nothing of the recipe itself).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { presetInfos } from '../../../app/api/registries/models';
import type { PresetInfo } from '../../../app/api/types';
import type * as Drafts from '../../../renderer/src/lib/state/trainingDrafts';
import { loadRendererModule } from '../../support/rendererModule';

const { adoptPresetTraining, newTrainingDraft, trainingOptions } = loadRendererModule<typeof Drafts>('renderer/src/lib/state/trainingDrafts.ts');

function preset(name: string): PresetInfo {
  const found = presetInfos().find((entry) => entry.name === name);
  assert.ok(found, `the preset ${name}`);
  return found;
}

describe('adoptPresetTraining', () => {
  test("Fast ResNet's recipe fills the settings, its shifts of 2 pixels included, and training:start sends it", () => {
    const fast = preset('resnet_fast');
    assert.deepEqual(fast.training.augment, { translate: 2 }, 'models:presets carries the augmentation');
    const draft = newTrainingDraft();
    adoptPresetTraining(draft, fast.training);
    assert.deepEqual(draft.augment, { translate: 2, flip: false, rotate: null, scale: null, erase: null });
    const options = trainingOptions(draft, true);
    assert.equal(options.problem, undefined);
    assert.deepEqual(options.value?.augment, { translate: 2 });
    assert.equal(options.value?.batchSize, 128);
    assert.equal(options.value?.epochs, 15);
    assert.deepEqual(options.value?.lrSchedule, { kind: 'onecycle', maxLr: 0.004, pctStart: 0.25, divFactor: 20, finalDivFactor: 100 });
  });

  test("a preset's augmentation replaces what was typed, every kind of it; the weight average stays", () => {
    const draft = newTrainingDraft();
    const fields = draft.augment;
    Object.assign(draft.augment, { translate: 5, rotate: 10, scale: 0.1, erase: 0.25, flip: true });
    draft.ema = 0.99;
    adoptPresetTraining(draft, preset('resnet_rgb').training);
    assert.deepEqual(draft.augment, { translate: 4, flip: true, rotate: null, scale: null, erase: null });
    assert.equal(draft.augment, fields, 'the same object the fieldset is bound to');
    assert.equal(draft.ema, 0.99, 'no preset has a weight average: the typed one is kept');
  });

  test('a preset without augmentation clears it: nothing of the previous preset trains', () => {
    const draft = newTrainingDraft();
    adoptPresetTraining(draft, preset('resnet_fast').training);
    const tiny = preset('seed000');
    assert.equal(tiny.training.augment, undefined);
    adoptPresetTraining(draft, tiny.training);
    assert.deepEqual(draft.augment, { translate: null, flip: false, rotate: null, scale: null, erase: null });
    const options = trainingOptions(draft, true);
    assert.equal(options.problem, undefined);
    assert.equal(options.value?.augment, undefined);
    assert.deepEqual(options.value?.lrSchedule, { kind: 'constant' });
  });

  test('flat data never sends the augmentation, even after an image preset filled it', () => {
    const draft = newTrainingDraft();
    adoptPresetTraining(draft, preset('resnet_fast').training);
    assert.equal(trainingOptions(draft, false).value?.augment, undefined);
  });
});

describe('several GPUs in the training settings', () => {
  test('two or more chosen GPUs reach training:start in order; one, none or the CPU send none', () => {
    const draft = newTrainingDraft();
    assert.equal(trainingOptions(draft).value?.gpus, undefined, 'nothing chosen: the first GPU');
    draft.gpus = [2, 0];
    assert.deepEqual(trainingOptions(draft).value?.gpus, [0, 2]);
    draft.gpus = [1];
    assert.equal(trainingOptions(draft).value?.gpus, undefined, 'one GPU is the device choice alone');
    draft.gpus = [0, 1];
    draft.device = 'cpu';
    assert.equal(trainingOptions(draft).value?.gpus, undefined, 'a CPU run takes no GPUs');
  });
});

describe('the GPU arithmetic in the training settings', () => {
  test('mixed by default (the server\'s default, so not sent); TF32 and FP32 reach training:start unless the run is on the CPU', () => {
    const draft = newTrainingDraft();
    assert.equal(draft.precision, 'mixed');
    assert.equal(trainingOptions(draft).value?.precision, undefined, 'the default is the server\'s');
    draft.precision = 'tf32';
    assert.equal(trainingOptions(draft).value?.precision, 'tf32');
    draft.precision = 'fp32';
    assert.equal(trainingOptions(draft).value?.precision, 'fp32');
    draft.device = 'cpu';
    assert.equal(trainingOptions(draft).value?.precision, undefined, 'the CPU computes in FP32 and is asked nothing');
  });
});

test('the renderer\'s GPU default is the server\'s', async () => {
  const { defaultGpuPrecision } = await import('../../../app/core/model/precision');
  assert.equal(loadRendererModule<typeof Drafts>('renderer/src/lib/state/trainingDrafts.ts').gpuDefaultPrecision, defaultGpuPrecision);
});
