// Inputs the fuzzer found that readers handled badly, each fixed in the reader and pinned here: allocations
// a small file cannot justify (a gzip bomb, a damaged model.m width), and messages that quoted the file's
// content as it was (line breaks, 200 000 characters, "received undefined").
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { loadCsv } from '../../../app/core/data/csv';
import { DataError } from '../../../app/core/data/errors';
import { encodeIdx, loadIdx, maxIdxValues, readIdxBytes } from '../../../app/core/data/idx';
import { CourseModelError, parseCourseModel } from '../../../app/core/interop/courseModel';
import { decodeCheckpoint } from '../../../app/core/model/checkpointFile';
import { decodeModel, ModelFileError } from '../../../app/core/model/modelFile';
import { parseModelSpec } from '../../../app/core/model/spec';
import { decodeRun, RunFileError } from '../../../app/core/runs/runFile';
import { checkpointSeeds, modelSeeds, runSeeds } from './seeds';
import { fuzzReader } from './runner';

const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-fuzz-regressions-'));
process.on('exit', () => fs.rmSync(folder, { recursive: true, force: true }));

function write(name: string, bytes: Uint8Array | string): string {
  const file = path.join(folder, name);
  fs.writeFileSync(file, bytes);
  return file;
}

/** A message fit for one line of a terminal or a dialog. */
function assertShortOneLine(message: string, max = 400): void {
  assert.ok(!/[\r\n]/.test(message), `one line: ${JSON.stringify(message)}`);
  assert.ok(message.length <= max, `${message.length} characters: ${message.slice(0, 100)}…`);
}

/** Runs `body` with typed-array constructors that record the largest allocation asked for. */
function largestAllocation(body: () => void): number {
  let largest = 0;
  const originals = { Float64Array, Float32Array };
  for (const [name, type] of Object.entries(originals)) {
    (globalThis as Record<string, unknown>)[name] = new Proxy(type, {
      construct(target, args: unknown[], newTarget) {
        if (typeof args[0] === 'number') largest = Math.max(largest, args[0] * target.BYTES_PER_ELEMENT);
        return Reflect.construct(target, args, newTarget) as object;
      },
    });
  }
  try {
    body();
  } finally {
    Object.assign(globalThis, originals);
  }
  return largest;
}

function withSafetensorsHeader(bytes: Uint8Array, edit: (header: Record<string, any>) => void): Buffer {
  const buffer = Buffer.from(bytes);
  const length = Number(buffer.readBigUInt64LE(0));
  const header = JSON.parse(buffer.subarray(8, 8 + length).toString('utf8'));
  edit(header);
  const text = Buffer.from(JSON.stringify(header));
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(text.length));
  return Buffer.concat([prefix, text, buffer.subarray(8 + length)]);
}

describe('IDX: gzip files decompress only as far as their header says', () => {
  const header = encodeIdx([2], new Uint8Array([0, 1]));

  test('a gzip bomb (2 labels, then 256 MiB of zeros in 256 KiB) is cut at the header size and refused', async () => {
    const member = zlib.gzipSync(Buffer.alloc(1 << 20), { level: 9 });
    const bomb = Buffer.concat([zlib.gzipSync(header), ...Array.from({ length: 256 }, () => member)]);
    assert.ok(bomb.length < 512 * 1024);
    const labels = write('bomb-labels-idx1-ubyte.gz', bomb);
    const read = await readIdxBytes(labels);
    assert.equal(read.overflowed, true);
    assert.ok(read.bytes.length <= header.length + 1, `${read.bytes.length} bytes kept`);
    const images = write('bomb-images-idx3-ubyte', encodeIdx([2, 1, 1], new Uint8Array([0, 255])));
    await assert.rejects(loadIdx(images, { labelsPath: labels }), (error: unknown) => {
      assert.ok(error instanceof DataError);
      assert.equal(error.message, 'bomb-labels-idx1-ubyte.gz: decompresses to more than the 10 bytes its header (2 labels) accounts for');
      return true;
    });
  });

  test('a header claiming more than 2^31 - 1 values is refused before its data is read', async () => {
    const images = Buffer.from(encodeIdx([0x10000, 0x10000, 2], new Uint8Array(0)));
    const file = write('huge-images-idx3-ubyte.gz', zlib.gzipSync(Buffer.concat([images, Buffer.alloc(4096)])));
    const read = await readIdxBytes(file);
    assert.ok(read.bytes.length <= images.length + 1);
    const labels = write('huge-labels-idx1-ubyte', encodeIdx([1], new Uint8Array([0])));
    await assert.rejects(loadIdx(file, { labelsPath: labels }), {
      name: 'DataError',
      message: `huge-images-idx3-ubyte.gz: its header claims 65536 images of 65536x2 (8589934592 values), more than NN Studio reads from one IDX file (${maxIdxValues}): a damaged header?`,
    });
  });

  test('images of more than 4096x4096 pixels are refused from the header, before a gzip bomb is decompressed (seed 913001, case 16066)', async () => {
    // 2 images of 2 x 218 139 420 pixels: under 2^31 values, so only the per-image limit stops the read.
    const images = Buffer.from(encodeIdx([2, 2, 0x0d008b1c], new Uint8Array(0)));
    const member = zlib.gzipSync(Buffer.alloc(1 << 20), { level: 9 });
    const file = write('wide-images-idx3-ubyte.gz', Buffer.concat([zlib.gzipSync(images), ...Array.from({ length: 64 }, () => member)]));
    const read = await readIdxBytes(file);
    assert.ok(read.bytes.length <= images.length + 1, `${read.bytes.length} bytes kept`);
    const labels = write('wide-labels-idx1-ubyte', encodeIdx([2], new Uint8Array([0, 1])));
    await assert.rejects(loadIdx(file, { labelsPath: labels }), {
      name: 'DataError',
      message: 'wide-images-idx3-ubyte.gz: its header claims images of 2x218139420 pixels, more than NN Studio reads per image (4096x4096): a damaged header?',
    });
  });

  test('a labels file claiming more labels than there are images is refused from its header, before its data is decompressed', async () => {
    // 64 Mi labels of data really present (in 64 KiB of gzip), next to 2 images: only the header is read.
    const claimed = 64 << 20;
    const member = zlib.gzipSync(Buffer.alloc(1 << 20), { level: 9 });
    const labelsHeader = Buffer.from(encodeIdx([claimed], new Uint8Array(0)));
    const labels = write('many-labels-idx1-ubyte.gz', Buffer.concat([zlib.gzipSync(labelsHeader), ...Array.from({ length: 64 }, () => member)]));
    const head = await readIdxBytes(labels, { headerOnly: true });
    assert.ok(head.bytes.length < 1 << 20, `only the start is decompressed: ${head.bytes.length} bytes`);
    const images = write('two-images-idx3-ubyte', encodeIdx([2, 1, 1], new Uint8Array([0, 255])));
    await assert.rejects(loadIdx(images, { labelsPath: labels }), {
      name: 'DataError',
      message: `two-images-idx3-ubyte: has 2 images but many-labels-idx1-ubyte.gz has ${claimed} labels`,
    });
  });

  test('an images file whose count disagrees with the labels is refused from the headers, before the images are decompressed', async () => {
    // 3 images of 65536 x 28 claimed (5.5 MB) and present in 256 KiB of gzip, next to 127 labels
    const member = zlib.gzipSync(Buffer.alloc(1 << 20), { level: 9 });
    const imagesHeader = Buffer.from(encodeIdx([3, 65536, 28], new Uint8Array(0)));
    const images = write('wide-images-idx3-ubyte.gz', Buffer.concat([zlib.gzipSync(imagesHeader), ...Array.from({ length: 6 }, () => member)]));
    const labels = write('127-labels-idx1-ubyte', encodeIdx([127], new Uint8Array(127)));
    await assert.rejects(loadIdx(images, { labelsPath: labels }), {
      name: 'DataError',
      message: 'wide-images-idx3-ubyte.gz: has 3 images but 127-labels-idx1-ubyte has 127 labels',
    });
  });

  test('valid gzip files still load, a gzip of two members included', async () => {
    const images = write('ok-images-idx3-ubyte.gz', zlib.gzipSync(encodeIdx([2, 1, 2], new Uint8Array([0, 51, 102, 255]))));
    const labelBytes = encodeIdx([2], new Uint8Array([1, 0]));
    const labels = write('ok-labels-idx1-ubyte.gz', Buffer.concat([zlib.gzipSync(labelBytes.subarray(0, 5)), zlib.gzipSync(labelBytes.subarray(5))]));
    const dataset = await loadIdx(images, { labelsPath: labels });
    assert.deepEqual([...dataset.labels], [1, 0]);
    assert.deepEqual([...dataset.features], [0, 0.2, 0.4, 1].map(Math.fround));
  });
});

describe('model.m: sizes are checked against the values present before anything is allocated', () => {
  test('a damaged width (16777216) in a short file allocates nothing of that size', () => {
    let thrown: unknown;
    const largest = largestAllocation(() => {
      try {
        parseCourseModel('2\n16777216 15\n0.5 0.25\n', 'damaged.m');
      } catch (error) {
        thrown = error;
      }
    });
    assert.ok(thrown instanceof CourseModelError);
    assert.equal(thrown.message, 'damaged.m: line 3: the file ends before bias 3 of 15 of layer 1: file truncated?');
    assert.ok(largest < 1024, `${largest} bytes allocated`);
  });

  test('a 70 000-digit token fails in linear time (the number pattern backtracked quadratically: a hang)', () => {
    const began = process.hrtime.bigint();
    assert.throws(() => parseCourseModel(`3\n2 2 1\n0.5 ${'1'.repeat(70_000)}x 1\n1 2 3 4 5 6\n`, 'slow.m'), {
      message: `slow.m: line 3: bias 2 of 2 of layer 1 must be a finite number, got "${'1'.repeat(40)}…"`,
    });
    const milliseconds = Number(process.hrtime.bigint() - began) / 1e6;
    assert.ok(milliseconds < 200, `${milliseconds.toFixed(0)} ms`);
  });

  test('a 200 000-character token is cut in the message', () => {
    assert.throws(() => parseCourseModel(`3\n2 ${'x'.repeat(200_000)} 1\n`, 'long.m'), (error: unknown) => {
      assert.ok(error instanceof CourseModelError);
      assert.match(error.message, /^long\.m: line 2: the width of layer 1 \(size 2\) must be an integer from 1 to 16777216, got "x{40}…"$/);
      return true;
    });
  });
});

describe('files that load are valid everywhere they go', () => {
  test('CSV: a column with an empty header cell (a pandas index) reads back through the encoding it trained with', async () => {
    const file = write('indexed.csv', ',x,label\n0,1.5,a\n1,2.5,b\n2,0.5,a\n');
    const training = await loadCsv(file);
    assert.deepEqual(training.featureNames, ['col1', 'x']);
    const again = await loadCsv(file, { encoding: training.encoding });
    assert.deepEqual([...again.features], [...training.features]);
    assert.deepEqual([...again.labels], [...training.labels]);
  });

  test('CSV (fuzz seed 777001, case 29694): a file is read back through the encoding it produced', async () => {
    // An empty first-row cell once made this a header row whose label column was named "0", like the first
    // column: read back by name, the label came from the wrong column ("1.5" is not one of the classes).
    const file = write('case29694.csv', '0,,0\n1.5,0.25,1\n-2,3e2,0\n4,-0.125,1\n\n\n\n');
    const training = await loadCsv(file);
    assert.equal(training.encoding.hasHeader, false);
    assert.deepEqual(training.classLabels, ['0', '1']);
    const again = await loadCsv(file, { encoding: training.encoding });
    assert.deepEqual([...again.labels], [...training.labels]);
    assert.deepEqual([...again.features], [...training.features]);
    // Two columns of one name: the stored position picks the right one.
    const twice = write('twice.csv', 'x,x,label\n1,10,a\n2,20,b\n3,30,a\n');
    const first = await loadCsv(twice, { ignoreColumns: [0] });
    const reread = await loadCsv(twice, { encoding: first.encoding });
    assert.deepEqual([...reread.features], [10, 20, 30]);
  });

  test('CSV (fuzz seed 777001, case 7596): a pixel scale that makes values Infinity is refused', async () => {
    const file = write('case7596.csv', 'label,p0,p1,p2,p3\n1,9007199254740993,0,255,3\n0,1,2,3,4\n');
    await assert.rejects(loadCsv(file, { labelColumn: 'label', imageShape: [1, 2, 2], pixelScale: 1e-30 }), {
      name: 'DataError',
      message: 'case7596.csv: pixel scale 1e-30 is too small: 9007199254740992 / 1e-30 is beyond the 32-bit float range (use 255 for 0-255 pixels, 1 to keep the values)',
    });
    const fine = await loadCsv(file, { labelColumn: 'label', imageShape: [1, 2, 2], pixelScale: 1e-20 });
    assert.ok(fine.features.every(Number.isFinite));
  });

  test('CSV: 3 000 empty columns and a 3 000-column cell-problem list stay fast and short', async () => {
    const wide = write('wide.csv', `a,b,label\n${Array.from({ length: 30 }, (_, i) => `${i % 4},x${i % 3},${i % 2}${','.repeat(3000)}`).join('\n')}\n`);
    const began = process.hrtime.bigint();
    await assert.rejects(loadCsv(wide), /wide\.csv, row 2: 3003 field\(s\), expected 3 like the header/);
    const headerless = write('wide2.csv', Array.from({ length: 30 }, (_, i) => `${i % 4},x${i % 3}${','.repeat(3000)}${i % 2}`).join('\n'));
    const data = await loadCsv(headerless);
    assert.equal(data.featureNames.length, 1 + 3); // col1, col2 one-hot; 2 999 empty columns left out
    assert.match(data.notes![0], /^2999 empty columns left out: col3, col4,/);
    assert.ok(Number(process.hrtime.bigint() - began) / 1e6 < 1500);
    // control characters, not zero bytes: a file with zero bytes is refused before its cells (textEncoding.ts)
    const names = Array.from({ length: 8 }, (_, i) => `"${'\u0001'.repeat(40)}${i}"`).join(',');
    const bad = write('bad.csv', `${names},label\n${Array.from({ length: 8 }, () => 'x').join(',')},1\n`);
    await assert.rejects(loadCsv(bad, { imageShape: [1, 2, 4] }), (error: unknown) => {
      assert.ok(error instanceof DataError);
      assertShortOneLine(error.message, 1000);
      assert.match(error.message, /\(8 cell problems in all; also .*; …\)$/);
      return true;
    });
  });

  test('CSV (fuzz seed 777001, case 18307 after issue 13): 70 000 fields on one line are refused, not held as 70 000 columns', async () => {
    const file = write('oneline.csv', `${Array.from({ length: 70_000 }, () => '').join(',')},1\n`);
    await assert.rejects(loadCsv(file, { missingMarkers: ['?'] }), {
      name: 'DataError',
      message: 'oneline.csv, row 1: 70,001 columns in the first row, more than 65,536: is the delimiter right, and does each row end with a line break?',
    });
  });

  test('run files: a spec whose layers do not fit together is a RunFileError, not a SpecError from the run list', () => {
    const record = JSON.parse(runSeeds[1].text);
    record.spec.layers[0].filters = 2 ** 31;
    assert.throws(() => decodeRun(JSON.stringify(record), `${record.id}.json`), (error: unknown) => {
      assert.ok(error instanceof RunFileError);
      assert.equal(error.message, `${record.id}.json: spec: conv2d #1: 21474836480 parameters is too many (2^31 or more in one layer)`);
      return true;
    });
    record.spec.layers.splice(2, 1); // no flatten before the dense layer
    record.spec.layers[0].filters = 2;
    assert.throws(() => decodeRun(JSON.stringify(record), `${record.id}.json`), {
      name: 'RunFileError', message: `${record.id}.json: spec: dense #1: needs a flat input, got 2x2x2 (add a flatten layer)`,
    });
  });
});

describe('messages quote file content on one short line', () => {
  test('run files: a JSON syntax error whose context spans lines', () => {
    const text = runSeeds[0].text.replace('"name": "toy run"', '"name": "toy run",\n  é');
    assert.throws(() => decodeRun(text, 'r.json'), (error: unknown) => {
      assert.ok(error instanceof RunFileError);
      assert.match(error.message, /^r\.json: not valid JSON \(/);
      assertShortOneLine(error.message);
      return true;
    });
  });

  test('run files, model files and specs: a missing field is "missing", not "received undefined"', () => {
    const record = JSON.parse(runSeeds[0].text);
    delete record.options.lr;
    assert.throws(() => decodeRun(JSON.stringify(record), `${record.id}.json`), {
      message: `${record.id}.json: options.lr: missing (expected number)`,
    });
    assert.throws(() => parseModelSpec({ input: [2], layers: [{ kind: 'dense' }], loss: 'mse', optimizer: { kind: 'sgd', lr: 0.1 }, seed: 0 }), {
      message: 'invalid model spec at layers.0.units: missing (expected number)',
    });
    const noDtype = withSafetensorsHeader(modelSeeds[0], (header) => delete header['layers.0.weight'].dtype);
    assert.throws(() => decodeModel(noDtype, 'm.safetensors'), { message: 'm.safetensors: tensor layers.0.weight has dtype missing, NN Studio models hold F32' });
  });

  test('model files: a 10 000-element shape is cut', () => {
    const nested = withSafetensorsHeader(modelSeeds[0], (header) => { header['layers.0.bias'].shape = [Array.from({ length: 10_000 }, (_, i) => i)]; });
    assert.throws(() => decodeModel(nested, 'm.safetensors'), (error: unknown) => {
      assert.ok(error instanceof ModelFileError);
      assert.match(error.message, /^m\.safetensors: tensor layers\.0\.bias has a malformed shape \[\[0,1,2,.*…$/);
      assertShortOneLine(error.message);
      return true;
    });
    const flat = withSafetensorsHeader(modelSeeds[0], (header) => { header['layers.0.weight'].shape = Array.from({ length: 10_000 }, (_, i) => i); });
    assert.throws(() => decodeModel(flat, 'm.safetensors'), (error: unknown) => {
      assert.ok(error instanceof ModelFileError);
      assert.match(error.message, /^m\.safetensors: tensor layers\.0\.weight has shape \[0,1,2,.*…, the spec needs \[4,3\]$/);
      assertShortOneLine(error.message);
      return true;
    });
  });

  test('checkpoints: a 70 000-character unknown key is cut', () => {
    const bytes = withSafetensorsHeader(checkpointSeeds[0], (header) => {
      const block = JSON.parse(header.__metadata__.nnstudio_checkpoint);
      block.history[1]['x'.repeat(70_000)] = 1;
      header.__metadata__.nnstudio_checkpoint = JSON.stringify(block);
    });
    assert.throws(() => decodeCheckpoint(bytes, 'c.ckpt'), (error: unknown) => {
      assert.ok(error instanceof ModelFileError);
      assert.match(error.message, /^c\.ckpt: metadata nnstudio_checkpoint\.history\.1: Unrecognized key/);
      assertShortOneLine(error.message);
      return true;
    });
  });

  test('CSV: header names with line breaks or 200 000 characters are quoted and cut in column lists', async () => {
    const multiline = write('multiline.csv', 'a,"b\nc",label\n1,2,x\n3,4,y\n');
    await assert.rejects(loadCsv(multiline, { ignoreColumns: ['id'] }), (error: unknown) => {
      assert.ok(error instanceof DataError);
      assert.equal(error.message, 'multiline.csv: no ignored column named "id" (columns: a, "b\\nc", label)');
      return true;
    });
    const long = write('long.csv', `a,${'y'.repeat(200_000)},label\n1,2,x\n3,4,y\n`);
    await assert.rejects(loadCsv(long, { categorical: ['b'] }), (error: unknown) => {
      assert.ok(error instanceof DataError);
      assert.match(error.message, /^long\.csv: no categorical column named "b" \(columns: a, "y{40}…", label\)$/);
      return true;
    });
  });

  test('the checkpoint mutator survives a header that is valid JSON but not an object (seed 777001, cases 16117, 22437, 27037)', async () => {
    for (const start of [16117, 22437, 27037]) {
      const report = await fuzzReader('checkpoint', { seed: 777001, count: 1, start });
      assert.deepEqual(report.failures.map((failure) => failure.problem), [], `case ${start}`);
      assert.equal(report.accepted + report.rejected, 1, `case ${start} ran`);
    }
  });
});
