// CSV import, well-formed inputs: delimiters, headers, quoting, BOM, label choice, classes, one-hot, images.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import { checkDataset } from '../../../app/core/data/dataset';
import { detectHeader, loadCsv, parseStrictNumber, sniffDelimiter } from '../../../app/core/data/csv';
import { csvEncodingSchema } from '../../../app/core/data/encoding';

const root = path.resolve(__dirname, '../../../..');
const fixture = (name: string) => path.join(root, 'test/fixtures/data', name);
const sample = (name: string) => path.join(root, 'resources/samples', name);
const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-csv-'));
after(() => fs.rmSync(folder, { recursive: true, force: true }));
let fileNumber = 0;
function csvFile(text: string, name = `data${++fileNumber}.csv`): string {
  const file = path.join(folder, name);
  fs.writeFileSync(file, text);
  return file;
}
const rows = (features: Float32Array, width: number) =>
  Array.from({ length: features.length / width }, (_, i) => Array.from(features.subarray(i * width, (i + 1) * width)));

describe('parseStrictNumber', () => {
  test('accepts integers, decimals, exponents and signs', () => {
    for (const [text, value] of [['0', 0], ['42', 42], ['-7', -7], ['+3', 3], ['1.25', 1.25], ['.5', 0.5], ['6.', 6],
      ['1e3', 1000], ['-2.5E-2', -0.025], ['+4e+1', 40], [' 12 ', 12], ['007', 7]] as const) {
      assert.equal(parseStrictNumber(text), value, text);
    }
  });
  test('rejects everything else', () => {
    for (const text of ['', ' ', 'abc', '1.2.3', '0x10', '1e', 'e5', '.', '-', '+-1', '1,5', 'NaN', 'Infinity', '1_000', '12abc', '--1', '1 2']) {
      assert.ok(Number.isNaN(parseStrictNumber(text)), JSON.stringify(text));
    }
  });
});

describe('detection', () => {
  test('delimiter', () => {
    assert.equal(sniffDelimiter('a,b,c\n1,2,3\n'), ',');
    assert.equal(sniffDelimiter('a;b;c\n1;2;3\n'), ';');
    assert.equal(sniffDelimiter('a\tb\tc\n1\t2\t3\n'), '\t');
    assert.equal(sniffDelimiter('a|b\n1|2\n'), '|');
    assert.equal(sniffDelimiter('"x,y";b\n"1,2";3\n"4";5\n'), ';');
    assert.equal(sniffDelimiter('single\n1\n2\n'), ',');
  });
  test('header', () => {
    assert.equal(detectHeader([['a', 'b', 'label'], ['1', '2', 'x'], ['3', '4', 'y']]), true);
    assert.equal(detectHeader([['1', '2', 'x'], ['3', '4', 'y']]), false);
    assert.equal(detectHeader([['label', 'p0'], ['7', '0'], ['2', '255']]), true);
    assert.equal(detectHeader([['color', 'label'], ['red', 'yes'], ['blue', 'no']]), true);
    assert.equal(detectHeader([['red', 'yes'], ['blue', 'no'], ['red', 'no']]), false);
    assert.equal(detectHeader([['1', '2']]), false);
  });
});

describe('loadCsv', () => {
  test('iris sample: header, string labels in the last column, classes sorted', async () => {
    const iris = await loadCsv(sample('iris.csv'));
    checkDataset(iris);
    assert.equal(iris.count, 150);
    assert.deepEqual(iris.featureShape, [4]);
    assert.deepEqual(iris.featureNames, ['sepal_length', 'sepal_width', 'petal_length', 'petal_width']);
    assert.deepEqual(iris.classLabels, ['setosa', 'versicolor', 'virginica']);
    assert.deepEqual(Array.from(iris.features.subarray(0, 4)), [5.1, 3.5, 1.4, 0.2].map(Math.fround));
    assert.equal(iris.labels[0], 0);
    assert.equal(iris.labels[149], 2);
    assert.equal(iris.source, sample('iris.csv'));
    assert.deepEqual(iris.encoding.label, { name: 'species', index: 4 });
    assert.equal(iris.encoding.hasHeader, true);
    assert.equal(iris.encoding.delimiter, ',');
  });

  test('wine sample: numeric label in the first column, by name, by index 0 and by -14', async () => {
    const byName = await loadCsv(sample('wine.csv'), { labelColumn: 'class' });
    const byIndex = await loadCsv(sample('wine.csv'), { labelColumn: 0 });
    const fromEnd = await loadCsv(sample('wine.csv'), { labelColumn: -14 });
    const asText = await loadCsv(sample('wine.csv'), { labelColumn: '0' });
    for (const wine of [byName, byIndex, fromEnd, asText]) {
      assert.equal(wine.count, 178);
      assert.deepEqual(wine.featureShape, [13]);
      assert.deepEqual(wine.classLabels, ['1', '2', '3']);
      assert.equal(wine.featureNames[0], 'alcohol');
      assert.deepEqual(Array.from(wine.labels), Array.from(byName.labels));
    }
    assert.deepEqual([59, 71, 48], [0, 1, 2].map((c) => byName.labels.filter((label) => label === c).length));
    assert.equal(byName.features[0], Math.fround(14.23));
  });

  test('breast cancer sample: string labels', async () => {
    const cancer = await loadCsv(sample('breast_cancer.csv'));
    assert.equal(cancer.count, 569);
    assert.deepEqual(cancer.featureShape, [30]);
    assert.deepEqual(cancer.classLabels, ['benign', 'malignant']);
    assert.equal(cancer.labels.filter((label) => label === 1).length, 212);
  });

  test('semicolons, BOM, quoted header and fields', async () => {
    const data = await loadCsv(fixture('semicolon_bom.csv'));
    assert.deepEqual(data.featureNames, ['length', 'width']);
    assert.deepEqual(rows(data.features, 2), [[1.5, 2.5], [-3, 40], [0.5, 6]]);
    assert.deepEqual(data.classLabels, ['a b', 'c;d']);
    assert.deepEqual(Array.from(data.labels), [0, 1, 0]);
    assert.equal(data.encoding.delimiter, ';');
  });

  test('tabs without a header; numeric labels sorted numerically, 2 and 2.0 one class', async () => {
    const data = await loadCsv(fixture('tab_numeric_labels.tsv'));
    assert.equal(data.encoding.hasHeader, false);
    assert.equal(data.encoding.delimiter, '\t');
    assert.deepEqual(data.featureNames, ['col1', 'col2']);
    assert.deepEqual(data.classLabels, ['2', '10']);
    assert.deepEqual(Array.from(data.labels), [1, 0, 1, 0]);
    assert.deepEqual(rows(data.features, 2), [[1, 2], [3, 4], [5, 6], [7, 8]]);
  });

  test('quoted multi-line fields, doubled quotes, CRLF, blank trailing lines, ignored columns', async () => {
    const data = await loadCsv(fixture('quoted_crlf.csv'), { ignoreColumns: ['id', 1] });
    assert.equal(data.count, 3);
    assert.deepEqual(data.featureNames, ['x', 'y']);
    assert.deepEqual(rows(data.features, 2), [[0.5, 1], [1.5, 2], [2.5, 3]]);
    assert.deepEqual(data.classLabels, ['no', 'yes']);
    assert.deepEqual(data.encoding.columns.map((column) => column.index), [2, 3]);
  });

  test('overrides: delimiter, header off and on', async () => {
    const headerless = csvFile('5|6|a\n7|8|b\n');
    const data = await loadCsv(headerless, { delimiter: '|', header: false });
    assert.equal(data.count, 2);
    const forced = await loadCsv(headerless, { delimiter: '|', header: true });
    assert.equal(forced.count, 1);
    assert.deepEqual(forced.featureNames, ['5', '6']);
    const tabs = csvFile('1\t2\tx\n3\t4\ty\n');
    assert.equal((await loadCsv(tabs, { delimiter: 'tab' })).count, 2);
    assert.equal((await loadCsv(tabs, { delimiter: '\\t' })).count, 2);
  });

  test('categorical columns are one-hot encoded with sorted categories', async () => {
    const data = await loadCsv(fixture('categorical.csv'), { categorical: ['color', 1] });
    assert.deepEqual(data.featureNames, ['color=blue', 'color=green', 'color=red', 'size=L', 'size=M', 'size=S', 'weight']);
    assert.deepEqual(rows(data.features, 7), [
      [0, 0, 1, 0, 0, 1, 1],
      [1, 0, 0, 0, 1, 0, 2],
      [0, 0, 1, 1, 0, 0, 3],
      [0, 1, 0, 0, 1, 0, 4],
    ]);
    assert.deepEqual(data.classLabels, ['apple', 'berry', 'cherry']);
    assert.deepEqual(data.encoding.columns[0], { kind: 'categorical', name: 'color', index: 0, categories: ['blue', 'green', 'red'] });
    assert.deepEqual(csvEncodingSchema.parse(JSON.parse(JSON.stringify(data.encoding))), data.encoding);
  });

  test('the encoding reproduces the training transformation on a later file', async () => {
    const training = await loadCsv(fixture('categorical.csv'), { categorical: ['color', 'size'] });
    // Reordered columns, a subset of categories and classes, an extra column: matched by name.
    const later = csvFile('extra,weight,label,size,color\nq,9,cherry,S,green\nr,8,apple,L,blue\n');
    const data = await loadCsv(later, { encoding: training.encoding });
    assert.deepEqual(data.featureNames, training.featureNames);
    assert.deepEqual(data.classLabels, training.classLabels);
    assert.deepEqual(rows(data.features, 7), [[0, 1, 0, 0, 0, 1, 9], [1, 0, 0, 1, 0, 0, 8]]);
    assert.deepEqual(Array.from(data.labels), [2, 0]);
    // Unlabeled prediction input without the label column, matched by position.
    const headerless = await loadCsv(fixture('tab_numeric_labels.tsv'));
    const unlabeled = await loadCsv(csvFile('9,10\n11,12\n'), { encoding: headerless.encoding, unlabeled: true });
    assert.deepEqual(rows(unlabeled.features, 2), [[9, 10], [11, 12]]);
    assert.deepEqual(Array.from(unlabeled.labels), [-1, -1]);
    assert.deepEqual(unlabeled.classLabels, ['2', '10']);
  });

  test('known class labels keep the model order, also for numeric labels written differently', async () => {
    const data = await loadCsv(csvFile('a,label\n1,2.0\n2,0\n'), { classLabels: ['0', '1', '2'] });
    assert.deepEqual(data.classLabels, ['0', '1', '2']);
    assert.deepEqual(Array.from(data.labels), [2, 0]);
  });

  test('image shape: Kaggle-style pixel CSV with the label first', async () => {
    const data = await loadCsv(fixture('pixels_2x2.csv'), { labelColumn: 0, imageShape: [1, 2, 2], pixelScale: 255 });
    assert.deepEqual(data.featureShape, [1, 2, 2]);
    assert.equal(data.pixelScale, 255);
    assert.deepEqual(data.classLabels, ['2', '7']);
    assert.deepEqual(Array.from(data.labels), [1, 0, 1]);
    assert.deepEqual(Array.from(data.features.subarray(0, 4)), [0, 1, 128 / 255, 0].map(Math.fround));
    assert.deepEqual(data.encoding.imageShape, [1, 2, 2]);
    assert.equal(data.encoding.pixelScale, 255);
    assert.deepEqual(csvEncodingSchema.parse(JSON.parse(JSON.stringify(data.encoding))), data.encoding);
    // The encoding carries shape and scale to a later file.
    const again = await loadCsv(fixture('pixels_2x2.csv'), { encoding: data.encoding });
    assert.deepEqual(again.featureShape, [1, 2, 2]);
    assert.deepEqual(Array.from(again.features), Array.from(data.features));
  });

  test('blank lines anywhere are skipped, also past the header-detection sample', async () => {
    const body = Array.from({ length: 300 }, (_, i) => `${i},${i % 3 === 0 ? 'a' : 'b'}`);
    body.splice(250, 0, '', '   ');
    const data = await loadCsv(csvFile(`x,label\n\n${body.join('\n')}\n\n`));
    assert.equal(data.count, 300);
    assert.equal(data.features[299], 299);
  });

  test('limit reads only the first rows', async () => {
    const data = await loadCsv(sample('iris.csv'), { limit: 10 });
    assert.equal(data.count, 10);
    assert.deepEqual(data.classLabels, ['setosa']);
  });

  test('streams a multi-chunk file (5 000 rows x 785 columns, 10 MB)', async () => {
    const lines = ['label,' + Array.from({ length: 784 }, (_, i) => `pixel${i}`).join(',')];
    for (let r = 0; r < 5000; r++) {
      const pixels = Array.from({ length: 784 }, (_, i) => ((r * 7 + i * 13) % 256).toString());
      lines.push(`${r % 10},${pixels.join(',')}`);
    }
    const file = csvFile(lines.join('\n') + '\n', 'big.csv');
    const started = process.hrtime.bigint();
    const data = await loadCsv(file, { labelColumn: 0, imageShape: [1, 28, 28] });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    assert.equal(data.count, 5000);
    assert.equal(data.features.length, 5000 * 784);
    assert.equal(data.features[784 * 4999 + 783], (4999 * 7 + 783 * 13) % 256);
    assert.equal(data.features[784 * 123 + 5], (123 * 7 + 5 * 13) % 256);
    assert.deepEqual(data.classLabels, ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
    assert.ok(seconds < 10, `took ${seconds.toFixed(2)} s`);
  });
});
