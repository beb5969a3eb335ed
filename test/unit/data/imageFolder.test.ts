// Image folders (issue 15): the BMP reader, the folder's rules (classes, size, colour, undecodable files) and
// the loader on MNIST digits written as tinted images of mixed sizes in every format sharp (or bmp.ts) reads.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { decodeBmp } from '../../../app/core/data/bmp';
import { checkDataset } from '../../../app/core/data/dataset';
import { defaultImageSize, parseImageSize } from '../../../app/core/data/imageFolder';
import { loadImageFolder } from '../../../app/services/imageFolders';
import { encodeBmp24, writeDigitFolder } from '../../support/imageFolder';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-imagefolder-'));
after(() => fs.rmSync(scratch, { recursive: true, force: true }));

describe('the BMP reader', () => {
  test('reads a 24-bit bottom-up BMP back to the pixels written', () => {
    const rgb = Uint8Array.from({ length: 5 * 3 * 3 }, (_, i) => (i * 37) % 256);
    const image = decodeBmp(encodeBmp24(rgb, 5, 3));
    assert.equal(image.width, 5);
    assert.equal(image.height, 3);
    assert.deepEqual([...image.data], [...rgb]);
  });

  test('reads an 8-bit palette image, top-down', () => {
    // 2x2, palette of 2 colours (BGRA order), rows padded to 4 bytes, height -2 = top-down
    const file = Buffer.alloc(54 + 8 + 8);
    file.write('BM', 0, 'latin1');
    file.writeUInt32LE(54 + 8, 10);
    file.writeUInt32LE(40, 14);
    file.writeInt32LE(2, 18);
    file.writeInt32LE(-2, 22);
    file.writeUInt16LE(8, 28);
    file.writeUInt32LE(2, 46);
    Buffer.from([0, 0, 255, 0, 255, 0, 0, 0]).copy(file, 54); // red, blue
    Buffer.from([0, 1, 0, 0, 1, 0, 0, 0]).copy(file, 62);
    assert.deepEqual([...decodeBmp(file).data], [255, 0, 0, 0, 0, 255, 0, 0, 255, 255, 0, 0]);
  });

  test('refuses RLE and cut files with a message saying so', () => {
    const file = encodeBmp24(new Uint8Array(12), 2, 2);
    const rle = Buffer.from(file);
    rle.writeUInt16LE(8, 28);
    rle.writeUInt32LE(1, 30);
    assert.throws(() => decodeBmp(rle), /RLE8-compressed BMP is not supported; save it as PNG/);
    assert.throws(() => decodeBmp(file.subarray(0, 60)), /BMP file cut short/);
    assert.throws(() => decodeBmp(Buffer.from('BMxx')), /not a BMP file/);
  });
});

test('mutated BMPs decode or fail with the reader\'s own message, never a RangeError', () => {
  let seed = 12345;
  const next = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  const valid = encodeBmp24(Uint8Array.from({ length: 7 * 5 * 3 }, (_, i) => i % 251), 7, 5);
  for (let round = 0; round < 2000; round++) {
    const bytes = Buffer.from(valid.subarray(0, next() < 0.2 ? Math.floor(next() * valid.length) : valid.length));
    for (let k = 0; k < 1 + Math.floor(next() * 4); k++) if (bytes.length > 2) bytes[2 + Math.floor(next() * (bytes.length - 2))] = Math.floor(next() * 256);
    try {
      const image = decodeBmp(bytes);
      assert.equal(image.data.length, image.width * image.height * 3);
    } catch (error) {
      assert.ok(!(error instanceof RangeError), `round ${round}: ${String(error)}`);
      assert.match((error as Error).message, /BMP|bit fields/, `round ${round}: ${(error as Error).message}`);
    }
  }
});

describe('the folder rules', () => {
  test('the default size is the median size, longer side capped at 64', () => {
    assert.deepEqual(defaultImageSize([{ width: 20, height: 20 }, { width: 30, height: 30 }, { width: 40, height: 40 }]), [30, 30]);
    assert.deepEqual(defaultImageSize([{ width: 640, height: 480 }]), [48, 64]);
    assert.deepEqual(parseImageSize('32'), [32, 32]);
    assert.deepEqual(parseImageSize('24x48'), [24, 48]);
    assert.throws(() => parseImageSize('0x10'), /1 to 512 a side/);
  });
});

describe('loading a folder of coloured digits', () => {
  const root = path.join(scratch, 'digits');
  before(async () => {
    await writeDigitFolder(root, { perClass: 10, formats: ['png', 'jpeg', 'webp', 'gif', 'bmp'] });
    fs.writeFileSync(path.join(root, 'two', 'broken.png'), 'this is not a PNG');
    fs.writeFileSync(path.join(root, 'two', 'notes.txt'), 'not an image');
    fs.writeFileSync(path.join(root, '.DS_Store'), '');
  });

  test('class names from the folders, RGB, the median size, the corrupt file skipped and named', async () => {
    const dataset = await loadImageFolder(root);
    checkDataset(dataset);
    assert.deepEqual(dataset.classLabels, ['one', 'two', 'zero']);
    assert.equal(dataset.count, 30);
    assert.equal(dataset.featureShape[0], 3);
    assert.equal(dataset.featureShape[1], dataset.featureShape[2]);
    assert.ok(dataset.featureShape[1] >= 20 && dataset.featureShape[1] <= 40, `size ${dataset.featureShape}`);
    assert.equal(dataset.pixelScale, 255);
    assert.equal(dataset.imageFit, 'crop');
    const notes = (dataset.notes ?? []).join('\n');
    assert.match(notes, /1 of 31 images could not be decoded and were skipped: two\/broken\.png \(/);
    assert.match(notes, /1 file left out, not images by name \(two\/notes\.txt\)/);
    assert.match(notes, /read in colour \(RGB\)/);
    assert.ok(dataset.features.every((value) => value >= 0 && value <= 1));
  });

  test('colour survives: a red-tinted digit has red but little green or blue', async () => {
    // writeDigitFolder tints image n with tints[n % 5]: the very first image (zero... in folder order "one") is red
    const dataset = await loadImageFolder(root, { size: [28, 28] });
    const plane = 28 * 28;
    const first = dataset.features.subarray(0, 3 * plane);
    const sumOf = (c: number) => first.subarray(c * plane, (c + 1) * plane).reduce((a, b) => a + b, 0);
    const [red, green, blue] = [sumOf(0), sumOf(1), sumOf(2)];
    assert.ok(red > 2 * green && red > 2 * blue, `red ${red}, green ${green}, blue ${blue}`);
  });

  test('size, channels and fit as chosen; a letterbox leaves black bars', async () => {
    const grey = await loadImageFolder(root, { size: [16, 24], channels: 1, fit: 'letterbox' });
    assert.deepEqual(grey.featureShape, [1, 16, 24]);
    assert.equal(grey.imageFit, 'letterbox');
    // square digits in a 16x24 box: 4 black columns on each side
    for (let i = 0; i < grey.count; i++) {
      for (let y = 0; y < 16; y++) for (const x of [0, 1, 2, 22, 23]) assert.equal(grey.features[i * 384 + y * 24 + x], 0);
    }
    assert.match((grey.notes ?? []).join('\n'), /resized to 16x24 \(height x width\) by letterbox/);
  });

  test('--limit takes images from every class in turn', async () => {
    const dataset = await loadImageFolder(root, { limit: 6 });
    assert.deepEqual([...dataset.labels], [0, 0, 1, 1, 2, 2]);
  });
});

describe('grey folders and refusals', () => {
  test('grey images give one channel, even saved as RGB JPEG', async () => {
    const root = path.join(scratch, 'grey');
    await writeDigitFolder(root, { perClass: 4, colour: false, formats: ['jpeg', 'png'] });
    const dataset = await loadImageFolder(root);
    assert.equal(dataset.featureShape[0], 1);
    assert.match((dataset.notes ?? []).join('\n'), /read as grayscale \(one channel\): none of the 12 images has colour/);
  });

  test('one coloured image among grey ones: colour, with the image named and the way to read all as grey', async () => {
    const root = path.join(scratch, 'mostly-grey');
    await writeDigitFolder(root, { perClass: 8, colour: false, formats: ['png'] });
    fs.writeFileSync(path.join(root, 'one', 'red.png'), await sharp({ create: { width: 24, height: 24, channels: 3, background: '#d02020' } }).png().toBuffer());
    const dataset = await loadImageFolder(root, { size: [16, 16] });
    assert.equal(dataset.featureShape[0], 3);
    assert.match((dataset.notes ?? []).join('\n'), /read in colour \(RGB\): 1 of 25 images has colour \(one\/red\.png\); grayscale \(--channels 1, or Colour on the Data screen\) reads them all with one channel/);
  });

  test('TIFF and AVIF images are read; a phone\'s HEIC photo is left out with what to do about it, an empty file said to be empty', async () => {
    const root = path.join(scratch, 'tiff-avif');
    await writeDigitFolder(root, { perClass: 4, formats: ['tiff', 'avif'] });
    fs.writeFileSync(path.join(root, 'one', 'IMG_0001.HEIC'), 'ftypheic');
    fs.writeFileSync(path.join(root, 'two', 'empty.png'), '');
    const dataset = await loadImageFolder(root, { size: [28, 28] });
    assert.equal(dataset.count, 12, 'every TIFF and AVIF image, not the empty file');
    assert.equal(dataset.featureShape[0], 3);
    const notes = (dataset.notes ?? []).join('\n');
    assert.match(notes, /1 HEIC photo left out: HEIC cannot be read here; export it as JPEG .*\(one\/IMG_0001\.HEIC\)/);
    assert.doesNotMatch(notes, /not images by name/, 'the HEIC photo is named once, as a HEIC photo');
    assert.match(notes, /1 of 13 images could not be decoded and were skipped: two\/empty\.png \(the file is empty\)/);
  });

  test('the folder above the class folders: one class, and a note that says which folder to open', async () => {
    const root = path.join(scratch, 'above');
    await writeDigitFolder(path.join(root, 'digits'), { perClass: 3, formats: ['png'] });
    const dataset = await loadImageFolder(root, { size: [16, 16] });
    assert.deepEqual(dataset.classLabels, ['digits']);
    assert.match((dataset.notes ?? []).join('\n'), /one class folder \(digits\/\), whose images lie in 3 folders of their own \(one\/, two\/, zero\/\): if those are the classes, open digits itself/);
  });

  test('more than 10 % undecodable images refuse the folder, naming them', async () => {
    const root = path.join(scratch, 'broken');
    await writeDigitFolder(root, { perClass: 4, formats: ['png'] });
    for (const name of ['a.png', 'b.jpg']) fs.writeFileSync(path.join(root, 'one', name), 'garbage');
    await assert.rejects(loadImageFolder(root), /broken: 2 of 14 images cannot be read as images \(more than 10 %\): one\/a\.png \(.*\); one\/b\.jpg/);
  });

  test('a folder without class folders says what it found', async () => {
    const root = path.join(scratch, 'flat');
    fs.mkdirSync(root);
    fs.writeFileSync(path.join(root, 'x.png'), await sharp({ create: { width: 4, height: 4, channels: 3, background: '#f00' } }).png().toBuffer());
    await assert.rejects(loadImageFolder(root), /flat: expected one subfolder of images per class \(e\.g\. cats\/, dogs\/\), but its 1 images are not in class folders/);
    const unlabeled = await loadImageFolder(root, { unlabeled: true, classLabels: ['a', 'b'], size: [4, 4] });
    assert.deepEqual([...unlabeled.labels], [-1]);
    assert.deepEqual(unlabeled.classLabels, ['a', 'b']);
  });
});
