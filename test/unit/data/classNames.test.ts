// Class names for IDX and MNIST data: checking the names, renaming a dataset, reading a model's files by the
// labels the files write, and the names through a data source (training data, its test pair, a model's data).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import { classNamesProblem, nameClassesLike, renameClasses, splitClassNames } from '../../../app/core/data/classNames';
import type { Dataset } from '../../../app/core/data/dataset';
import { encodeIdx } from '../../../app/core/data/idx';
import { loadDataSource, loadDataSourceFor, knownData } from '../../../app/services/dataSources';
import { separateTestSource } from '../../../app/services/trainingSetup';

const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-classnames-'));
after(() => fs.rmSync(folder, { recursive: true, force: true }));

function dataset(classLabels: string[], labels: number[]): Dataset {
  return { features: new Float32Array(labels.length), labels: Int32Array.from(labels), count: labels.length, featureShape: [1], featureNames: ['x'], classLabels, source: 'test' };
}

/** An IDX pair of `labels.length` 2x2 images with these label values. */
function writePair(name: string, labels: number[]): { imagesPath: string; labelsPath: string } {
  const imagesPath = path.join(folder, `${name}-images-idx3-ubyte`);
  const labelsPath = path.join(folder, `${name}-labels-idx1-ubyte`);
  fs.writeFileSync(imagesPath, encodeIdx([labels.length, 2, 2], Uint8Array.from({ length: labels.length * 4 }, (_, i) => i % 256)));
  fs.writeFileSync(labelsPath, encodeIdx([labels.length], Uint8Array.from(labels)));
  return { imagesPath, labelsPath };
}

describe('class names', () => {
  test('split at commas and trimmed', () => {
    assert.deepEqual(splitClassNames(' T-shirt, Trouser ,Bag'), ['T-shirt', 'Trouser', 'Bag']);
    assert.deepEqual(splitClassNames('a,,b'), ['a', '', 'b']);
  });

  test('one name per class, none empty, none repeated', () => {
    assert.equal(classNamesProblem(['a', 'b', 'c'], 3), undefined);
    assert.equal(classNamesProblem(['a', 'b'], 3), '3 class names needed (one per class), got 2');
    assert.equal(classNamesProblem(['a', ' ', 'c'], 3), 'class 2 has an empty name');
    assert.equal(classNamesProblem(['a', 'b', ' a'], 3), 'classes 1 and 3 are both named "a"');
    assert.equal(classNamesProblem(['x'.repeat(101), 'b'], 2), 'the name of class 1 is longer than 100 characters');
  });

  test('renaming keeps the labels and remembers the file\'s own', () => {
    const renamed = renameClasses(dataset(['0', '1', '2'], [2, 0, 1]), [' cat', 'dog', 'bird '], 'pets.idx');
    assert.deepEqual(renamed.classLabels, ['cat', 'dog', 'bird']);
    assert.deepEqual(renamed.labelValues, ['0', '1', '2']);
    assert.deepEqual(Array.from(renamed.labels), [2, 0, 1]);
    // Renamed again: the file's labels stay the first ones; back to them: nothing to remember.
    assert.deepEqual(renameClasses(renamed, ['a', 'b', 'c'], 'pets.idx').labelValues, ['0', '1', '2']);
    assert.equal(renameClasses(renamed, ['0', '1', '2'], 'pets.idx').labelValues, undefined);
    assert.throws(() => renameClasses(renamed, ['a', 'a', 'c'], 'pets.idx'), { message: 'pets.idx: classes 1 and 2 are both named "a" (classes now: cat, dog, bird)' });
  });

  test('a file read by its own labels takes the names of a model\'s classes', () => {
    const read = dataset(['0', '2'], [0, 1]);
    const named = nameClassesLike(read, ['0', '1', '2'], ['cat', 'dog', 'bird']);
    assert.deepEqual(named.classLabels, ['cat', 'bird']);
    assert.deepEqual(nameClassesLike(dataset(['7'], [0]), ['0'], ['cat']).classLabels, ['7'], 'an unknown label keeps its text');
  });
});

describe('class names through data sources', () => {
  const train = writePair('train', [0, 1, 2, 1, 0, 2]);
  const testPair = writePair('t10k', [2, 0]);

  test('an IDX source with names and a test pair', async () => {
    const source = { kind: 'idx' as const, ...train, classNames: ['cat', 'dog', 'bird'], test: testPair };
    const read = await loadDataSource(source);
    assert.deepEqual(read.classLabels, ['cat', 'dog', 'bird']);
    assert.deepEqual(read.labelValues, ['0', '1', '2']);

    const testSource = separateTestSource(source);
    assert.deepEqual(testSource, { kind: 'idx', ...testPair });
    // The test pair has only the labels 0 and 2: read by value, they are cat and bird of the training classes.
    const test = await loadDataSourceFor(testSource!, knownData(read));
    assert.deepEqual(test.classLabels, ['cat', 'dog', 'bird']);
    assert.deepEqual(Array.from(test.labels), [2, 0]);
  });

  test('a model\'s names read another file by its label values; a wrong count of names is refused', async () => {
    const known = { classLabels: ['cat', 'dog', 'bird'], labelValues: ['0', '1', '2'] };
    const read = await loadDataSourceFor({ kind: 'idx', ...testPair }, known);
    assert.deepEqual(Array.from(read.labels), [2, 0]);
    await assert.rejects(loadDataSource({ kind: 'idx', ...train, classNames: ['cat', 'dog'] }), /3 class names needed \(one per class\), got 2/);
  });

  test('MNIST takes names too, and its test half is read with them', async () => {
    const names = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
    const read = await loadDataSource({ kind: 'mnist', split: 'train', limit: 20, classNames: names });
    assert.deepEqual(read.classLabels, names);
    const test = await loadDataSourceFor({ kind: 'mnist', split: 'test', limit: 5 }, knownData(read));
    assert.deepEqual(test.classLabels, names);
  });
});
