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
import { unzipSync, zipSync } from 'fflate';
import { loadImageFolder } from '../../../app/services/imageFolders';
import { writeDigitFolder, zipOfFolder } from '../../support/imageFolder';
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
    const copied: string[] = [];
    for (const name of ['zero', 'one']) {
      for (const file of fs.readdirSync(path.join(dir, 'test', name)).slice(0, 5)) {
        fs.copyFileSync(path.join(dir, 'test', name, file), path.join(dir, 'new', file));
        copied.push(file);
      }
    }
    fs.writeFileSync(path.join(dir, 'new', 'broken.png'), 'not a PNG');
    const predicted = await runCli(['predict', '--model', 'digits.safetensors', '--data', 'new', '--out', 'p.csv'], dir);
    assert.equal(predicted.code, 0, predicted.stderr);
    assert.match(predicted.stderr, /note: 1 of 11 images could not be decoded and were skipped: broken\.png \(/, 'the skipped image is said');
    assert.match(predicted.stderr, /note: read in colour \(RGB\), as the model takes them/);
    const lines = fs.readFileSync(path.join(dir, 'p.csv'), 'utf8').trim().split('\n');
    assert.equal(lines[0], 'row,file,predicted,p_one,p_two,p_zero', 'each prediction names its image');
    assert.deepEqual(lines.slice(1).map((line) => line.split(',')[1]).sort(), copied.sort());
  });

  test('inspect --data folder/: classes with their image counts, the shape read, the damaged file in the notes', async () => {
    const shown = await runCli(['inspect', '--data', 'train'], dir);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^train: an image folder, 90 images in 3 classes\nread as 3 x \d+ x \d+ \(channels x height x width\), centre crop\n/);
    assert.match(shown.stdout, /\none +30\ntwo +30\nzero +30\n/);
    assert.match(shown.stdout, /notes:\n(.|\n)*1 of 91 images could not be decoded and were skipped: two\/corrupt\.jpg/);
    const json = JSON.parse((await runCli(['inspect', '--data', 'test', '--image-size', '20', '--json'], dir)).stdout);
    assert.deepEqual(json.classes, [{ name: 'one', images: 8 }, { name: 'two', images: 8 }, { name: 'zero', images: 8 }]);
    assert.deepEqual(json.shape, [3, 20, 20]);
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

describe('nnstudio with a ZIP of an image folder', () => {
  const dir = scratchDir('imagefolder-zip-cli');
  /** The ZIP with macOS's resource-fork folder added, which reading must skip. */
  const withMacJunk = (zip: Uint8Array): Uint8Array => zipSync({ ...unzipSync(zip), '__MACOSX/digits/._junk': new Uint8Array([1, 2, 3]) });
  before(async () => {
    await writeDigitFolder(path.join(dir, 'digits'), { perClass: 12, formats: ['png', 'jpeg'] });
    fs.writeFileSync(path.join(dir, 'digits.zip'), withMacJunk(zipOfFolder(path.join(dir, 'digits'), 'digits')));
    fs.writeFileSync(path.join(dir, 'broken.zip'), Buffer.from('PK\u0003\u0004 this is not really a zip'));
    fs.writeFileSync(path.join(dir, 'escape.zip'), zipSync({ 'a/../../outside.png': new Uint8Array([1]) }));
  });

  test('train --data digits.zip reads it like the folder: the folder names as classes, the run names the ZIP', async () => {
    const trained = await runCli(['train', '--data', 'digits.zip', '--layers', 'conv:4x3:relu,maxpool:2,dense:3', '--image-size', '16',
      '--epochs', '1', '--device', 'cpu', '--json', '--out', 'z.safetensors'], dir);
    assert.equal(trained.code, 0, trained.stderr);
    const model = await loadModel(path.join(dir, 'z.safetensors'));
    assert.deepEqual(model.labels, ['one', 'two', 'zero']);
    const fromZip = await loadImageFolder(path.join(dir, 'digits.zip'), { size: [16, 16] });
    const fromFolder = await loadImageFolder(path.join(dir, 'digits'), { size: [16, 16] });
    assert.equal(fromZip.count, fromFolder.count);
    assert.deepEqual(Array.from(fromZip.features.slice(0, 512)), Array.from(fromFolder.features.slice(0, 512)));
    assert.equal(path.basename(fromZip.source), 'digits.zip');
  });

  test('eval --data digits.zip; a damaged ZIP and one whose paths leave the folder get one clear line', async () => {
    const evaluation = await runCli(['eval', '--model', 'z.safetensors', '--data', 'digits.zip', '--json'], dir);
    assert.equal(evaluation.code, 0, evaluation.stderr);
    assert.equal(JSON.parse(evaluation.stdout).confusion.flat().reduce((a: number, b: number) => a + b, 0), 36);
    const broken = await runCli(['train', '--data', 'broken.zip', '--epochs', '1', '--device', 'cpu'], dir);
    assert.notEqual(broken.code, 0);
    assert.match(errorLine(broken), /broken\.zip: is not a ZIP that can be read \(/);
    const escape = await runCli(['train', '--data', 'escape.zip', '--epochs', '1', '--device', 'cpu'], dir);
    assert.notEqual(escape.code, 0);
    assert.match(errorLine(escape), /escape\.zip: holds a path that leaves the folder \(a\/\.\.\/\.\.\/outside\.png\)/);
    assert.equal(fs.existsSync(path.join(dir, '..', 'outside.png')), false);
  });
});
