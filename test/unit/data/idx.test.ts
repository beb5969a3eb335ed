// IDX reader: raw and gzip round trips, label-file discovery, and every header / size check.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import * as zlib from 'node:zlib';
import { checkDataset } from '../../../app/core/data/dataset';
import { DataError } from '../../../app/core/data/errors';
import { encodeIdx, labelsFileCandidates, loadIdx, looksLikeIdx } from '../../../app/core/data/idx';

const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-idx-'));
after(() => fs.rmSync(folder, { recursive: true, force: true }));

// Three 2x3 images with distinct pixels and labels 0, 2, 1.
const pixels = Uint8Array.from({ length: 3 * 6 }, (_, i) => (i * 15) % 256);
const labelValues = Uint8Array.from([0, 2, 1]);
const images = encodeIdx([3, 2, 3], pixels);
const labels = encodeIdx([3], labelValues);

function write(name: string, bytes: Uint8Array, subfolder = ''): string {
  const dir = path.join(folder, subfolder);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, name);
  fs.writeFileSync(file, bytes);
  return file;
}

async function rejectsWith(promise: Promise<unknown>, message: string | RegExp) {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof DataError, String(error));
    if (typeof message === 'string') assert.equal(error.message, message);
    else assert.match(error.message, message);
    return true;
  });
}

describe('IDX', () => {
  test('raw round trip, labels found beside the images', async () => {
    const imagesFile = write('train-images-idx3-ubyte', images, 'raw');
    write('train-labels-idx1-ubyte', labels, 'raw');
    const data = await loadIdx(imagesFile);
    checkDataset(data);
    assert.equal(data.count, 3);
    assert.deepEqual(data.featureShape, [1, 2, 3]);
    assert.equal(data.pixelScale, 255);
    assert.deepEqual(data.classLabels, ['0', '1', '2']);
    assert.deepEqual(Array.from(data.labels), [0, 2, 1]);
    assert.deepEqual(Array.from(data.features), Array.from(pixels, (value) => Math.fround(value / 255)));
    assert.equal(data.featureNames.length, 6);
    assert.ok(await looksLikeIdx(imagesFile));
  });

  test('gzip round trip (.gz names), and a limit', async () => {
    const imagesFile = write('t10k-images-idx3-ubyte.gz', zlib.gzipSync(images), 'gz');
    write('t10k-labels-idx1-ubyte.gz', zlib.gzipSync(labels), 'gz');
    const data = await loadIdx(imagesFile);
    assert.deepEqual(Array.from(data.features), Array.from(pixels, (value) => Math.fround(value / 255)));
    assert.deepEqual(Array.from(data.labels), [0, 2, 1]);
    const first = await loadIdx(imagesFile, { limit: 2 });
    assert.equal(first.count, 2);
    assert.equal(first.features.length, 12);
    assert.ok(await looksLikeIdx(imagesFile));
  });

  test('gzip images with a raw labels file, and the `.idx3-ubyte` naming', async () => {
    const imagesFile = write('train-images.idx3-ubyte.gz', zlib.gzipSync(images), 'mixed');
    write('train-labels.idx1-ubyte', labels, 'mixed');
    assert.equal((await loadIdx(imagesFile)).count, 3);
  });

  test('label file name candidates', () => {
    const at = (name: string) => labelsFileCandidates(path.join('d', name)).map((file) => path.basename(file));
    assert.deepEqual(at('train-images-idx3-ubyte'), ['train-labels-idx1-ubyte', 'train-labels-idx1-ubyte.gz']);
    assert.deepEqual(at('t10k-images-idx3-ubyte.gz'), ['t10k-labels-idx1-ubyte.gz', 't10k-labels-idx1-ubyte']);
    assert.deepEqual(at('train-images.idx3-ubyte'), ['train-labels.idx1-ubyte', 'train-labels.idx1-ubyte.gz']);
    assert.deepEqual(at('emnist-letters-test-images-idx3-ubyte'), ['emnist-letters-test-labels-idx1-ubyte', 'emnist-letters-test-labels-idx1-ubyte.gz']);
    assert.deepEqual(at('pictures.bin'), []);
  });

  test('an explicit labels file; labels not starting at 0 become the distinct values', async () => {
    const imagesFile = write('letters.idx', images, 'explicit');
    const labelsFile = write('letters-labels.idx', encodeIdx([3], Uint8Array.from([26, 1, 5])), 'explicit');
    const data = await loadIdx(imagesFile, { labelsPath: labelsFile });
    assert.deepEqual(data.classLabels, ['1', '5', '26']);
    assert.deepEqual(Array.from(data.labels), [2, 0, 1]);
  });

  test('known classes map label values; an unknown one is an error', async () => {
    const imagesFile = write('a-images-idx3-ubyte', images, 'known');
    const labelsFile = write('a-labels-idx1-ubyte', labels, 'known');
    const data = await loadIdx(imagesFile, { classLabels: ['2', '1', '0'] });
    assert.deepEqual(Array.from(data.labels), [2, 0, 1]);
    await rejectsWith(loadIdx(imagesFile, { classLabels: ['0', '1'] }),
      "a-labels-idx1-ubyte: label 2 of item 2 is not one of the model's classes (0, 1)");
    assert.ok(fs.existsSync(labelsFile));
  });

  test('transpose (EMNIST orientation)', async () => {
    const square = encodeIdx([1, 2, 2], Uint8Array.from([0, 51, 102, 153]));
    const imagesFile = write('sq-images-idx3-ubyte', square, 'transpose');
    write('sq-labels-idx1-ubyte', encodeIdx([1], Uint8Array.from([0])), 'transpose');
    const data = await loadIdx(imagesFile, { transpose: true });
    assert.deepEqual(Array.from(data.features), [0, 102, 51, 153].map((value) => Math.fround(value / 255)));
  });

  test('bad magic numbers', async () => {
    const labelsFile = write('ok-labels-idx1-ubyte', labels, 'magic');
    const swapped = write('swapped-images-idx3-ubyte', labels, 'magic');
    await rejectsWith(loadIdx(swapped, { labelsPath: labelsFile }),
      'swapped-images-idx3-ubyte: bad magic number 0x00000801, expected 0x00000803 for an IDX images file with 3 dimension(s) (an IDX labels file)');
    const text = write('text-images-idx3-ubyte', Buffer.from('hello, world'), 'magic');
    await rejectsWith(loadIdx(text, { labelsPath: labelsFile }), /^text-images-idx3-ubyte: bad magic number 0x68656c6c, .* \(not an IDX file\)$/);
    const floats = Buffer.from(images);
    floats[2] = 0x0d;
    const floatFile = write('float-images-idx3-ubyte', floats, 'magic');
    await rejectsWith(loadIdx(floatFile, { labelsPath: labelsFile }), /float32 values; only unsigned bytes are supported\)$/);
    const imagesFile = write('good-images-idx3-ubyte', images, 'magic');
    await rejectsWith(loadIdx(imagesFile, { labelsPath: imagesFile }),
      'good-images-idx3-ubyte: bad magic number 0x00000803, expected 0x00000801 for an IDX labels file with 1 dimension(s) (an IDX images file)');
    await rejectsWith(loadIdx(write('tiny-images-idx3-ubyte', Uint8Array.from([0, 0]), 'magic'), { labelsPath: labelsFile }),
      'tiny-images-idx3-ubyte: is too short for an IDX header (2 bytes)');
  });

  test('truncated and oversized files, raw and gzip', async () => {
    const labelsFile = write('x-labels-idx1-ubyte', labels, 'size');
    const truncated = write('cut-images-idx3-ubyte', images.subarray(0, images.length - 1), 'size');
    await rejectsWith(loadIdx(truncated, { labelsPath: labelsFile }),
      'cut-images-idx3-ubyte: is truncated: 33 bytes, but its header (3 images of 2x3) needs 34');
    const headerCut = write('head-images-idx3-ubyte', images.subarray(0, 10), 'size');
    await rejectsWith(loadIdx(headerCut, { labelsPath: labelsFile }), 'head-images-idx3-ubyte: is truncated: 10 bytes, shorter than its 16-byte header');
    const longer = write('long-images-idx3-ubyte', Buffer.concat([images, Buffer.from([1, 2])]), 'size');
    await rejectsWith(loadIdx(longer, { labelsPath: labelsFile }),
      'long-images-idx3-ubyte: has 2 bytes more than its header (3 images of 2x3) accounts for (34 bytes)');
    const gzCut = write('cut-images-idx3-ubyte.gz', zlib.gzipSync(images.subarray(0, 30)), 'size');
    await rejectsWith(loadIdx(gzCut, { labelsPath: labelsFile }), /^cut-images-idx3-ubyte\.gz: is truncated: 30 bytes/);
    const brokenGzip = zlib.gzipSync(images).subarray(0, 20);
    const broken = write('broken-images-idx3-ubyte.gz', brokenGzip, 'size');
    await rejectsWith(loadIdx(broken, { labelsPath: labelsFile }), /^broken-images-idx3-ubyte\.gz: is not a valid gzip file/);
  });

  test('images and labels counts must match', async () => {
    const imagesFile = write('n-images-idx3-ubyte', images, 'count');
    write('n-labels-idx1-ubyte', encodeIdx([2], Uint8Array.from([0, 1])), 'count');
    await rejectsWith(loadIdx(imagesFile), 'n-images-idx3-ubyte: has 3 images but n-labels-idx1-ubyte has 2 labels');
  });

  test('missing labels file', async () => {
    const imagesFile = write('lonely-images-idx3-ubyte', images, 'missing');
    await rejectsWith(loadIdx(imagesFile),
      'lonely-images-idx3-ubyte: labels file not found beside it (looked for lonely-labels-idx1-ubyte, lonely-labels-idx1-ubyte.gz); give it explicitly');
    await rejectsWith(loadIdx(write('pictures.bin', images, 'missing')),
      'pictures.bin: no labels file given, and its name has no "images" part to derive one from');
    await rejectsWith(loadIdx(path.join(folder, 'missing', 'nothing-images-idx3-ubyte'), { labelsPath: imagesFile }),
      'nothing-images-idx3-ubyte: file not found');
  });
});
