// Image folders from the command line (issue 15): train on a folder of coloured digits of mixed sizes and
// formats with a separate test folder, evaluate and predict folders, export ONNX with a [N,3,H,W] input that
// onnxruntime runs to the same probabilities; a corrupt image is skipped with a note, too many refuse.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { before, describe, test } from 'node:test';
import * as ort from 'onnxruntime-node';
import { loadModel } from '../../../app/core/model/modelFile';
import { onnxInputName, onnxOutputName } from '../../../app/core/interop/onnxExport';
import { loadImageFolder } from '../../../app/services/imageFolders';
import { writeDigitFolder } from '../../support/imageFolder';
import { errorLine, runCli, scratchDir } from './cliHarness';

describe('nnstudio with an image folder', () => {
  const dir = scratchDir('imagefolder-cli');
  before(async () => {
    await writeDigitFolder(path.join(dir, 'train'), { perClass: 30, formats: ['png', 'jpeg', 'webp', 'gif', 'bmp'] });
    await writeDigitFolder(path.join(dir, 'test'), { perClass: 8, formats: ['jpeg', 'png'] });
    fs.writeFileSync(path.join(dir, 'train', 'two', 'corrupt.jpg'), 'not a JPEG at all');
  });

  test('train --data folder/ --test-data folder/: folder names as classes, RGB input, the corrupt file named', async () => {
    const trained = await runCli(['train', '--data', 'train', '--test-data', 'test', '--layers', 'conv:8x3:relu,maxpool:2,dense:3',
      '--image-size', '24', '--epochs', '3', '--lr', '0.01', '--device', 'cpu', '--no-history', '--out', 'digits.safetensors'], dir);
    assert.equal(trained.code, 0, trained.stderr);
    const printed = trained.stdout + trained.stderr;
    assert.match(printed, /note: 1 of 91 images could not be decoded and were skipped: two\/corrupt\.jpg \(/);
    assert.match(printed, /note: images resized to 24x24 \(height x width\) by centre crop/);
    assert.match(printed, /note: read in colour \(RGB\)/);
    assert.match(trained.stdout, /test set \(24 examples\)/);
    const model = await loadModel(path.join(dir, 'digits.safetensors'));
    assert.deepEqual(model.labels, ['one', 'two', 'zero']);
    assert.deepEqual(model.inputShape, [3, 24, 24]);
    assert.equal((model.preprocessing as { imageFit?: string }).imageFit, 'crop');
  });

  test('eval reads another folder at the model\'s size and by class name; predict reads loose images', async () => {
    const evaluation = await runCli(['eval', '--model', 'digits.safetensors', '--data', 'test', '--json'], dir);
    assert.equal(evaluation.code, 0, evaluation.stderr);
    const report = JSON.parse(evaluation.stdout);
    assert.deepEqual(report.labels, ['one', 'two', 'zero']);
    assert.equal(report.confusion.flat().reduce((a: number, b: number) => a + b, 0), 24);

    fs.mkdirSync(path.join(dir, 'new'));
    for (const name of ['zero', 'one']) {
      const file = fs.readdirSync(path.join(dir, 'test', name))[0];
      fs.copyFileSync(path.join(dir, 'test', name, file), path.join(dir, 'new', file));
    }
    const predicted = await runCli(['predict', '--model', 'digits.safetensors', '--data', 'new', '--out', 'p.csv'], dir);
    assert.equal(predicted.code, 0, predicted.stderr);
    const lines = fs.readFileSync(path.join(dir, 'p.csv'), 'utf8').trim().split('\n');
    assert.equal(lines[0], 'row,predicted,p_one,p_two,p_zero');
    assert.equal(lines.length, 3);
  });

  test('the ONNX export takes [N,3,H,W] and agrees with the engine', async () => {
    const exported = await runCli(['export', '--model', 'digits.safetensors', '--out', 'digits.onnx'], dir);
    assert.equal(exported.code, 0, exported.stderr);
    const images = await loadImageFolder(path.join(dir, 'test'), { size: [24, 24], channels: 3 });
    const pixels = Float32Array.from(images.features, (value) => value * 255);
    const session = await ort.InferenceSession.create(path.join(dir, 'digits.onnx'));
    assert.deepEqual(session.inputNames, [onnxInputName]);
    const output = (await session.run({ [onnxInputName]: new ort.Tensor('float32', pixels, [images.count, 3, 24, 24]) }))[onnxOutputName];
    await session.release();
    const evaluation = JSON.parse((await runCli(['eval', '--model', 'digits.safetensors', '--data', 'test', '--json'], dir)).stdout);
    const onnxPredictions = Array.from({ length: images.count }, (_, row) => {
      const p = Array.from((output.data as Float32Array).subarray(row * 3, row * 3 + 3));
      return p.indexOf(Math.max(...p));
    });
    const onnxConfusion = [[0, 0, 0], [0, 0, 0], [0, 0, 0]];
    onnxPredictions.forEach((predicted, row) => onnxConfusion[images.labels[row]][predicted]++);
    assert.deepEqual(onnxConfusion, evaluation.confusion);
  });

  test('image flags on a file, and a folder of mostly broken images, are refused in one line', async () => {
    const flags = await runCli(['train', '--data', 'mnist', '--image-size', '20', '--limit', '100', '--device', 'cpu'], dir);
    assert.equal(flags.code, 1);
    assert.match(errorLine(flags), /--image-size, --channels and --fit apply to image folders; mnist is not a folder/);
    const broken = path.join(dir, 'broken');
    await writeDigitFolder(broken, { perClass: 2, formats: ['png'] });
    fs.writeFileSync(path.join(broken, 'zero', 'bad.png'), 'x');
    const refused = await runCli(['train', '--data', 'broken', '--device', 'cpu'], dir);
    assert.equal(refused.code, 1);
    assert.match(errorLine(refused), /broken: 1 of 7 images cannot be read as images \(more than 10 %\): zero\/bad\.png/);
  });
});
