// CSV import, malformed inputs: every error is a one-line DataError naming the file, row and column.
// Cells that must be numbers are those of pixel CSVs (imageShape) and of encodings written before issue 13
// (no missingMarkers); elsewhere a non-number makes a column text or, when rare, missing (csvMessy.test.ts).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import { loadCsv, type CsvOptions } from '../../../app/core/data/csv';
import type { CsvEncoding } from '../../../app/core/data/encoding';
import { DataError } from '../../../app/core/data/errors';

const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-csv-errors-'));
after(() => fs.rmSync(folder, { recursive: true, force: true }));

/** Writes `text` to `name` and expects loadCsv to reject with exactly `message`. */
async function rejects(name: string, text: string, message: string, options: CsvOptions = {}) {
  const file = path.join(folder, name);
  fs.writeFileSync(file, text);
  await assert.rejects(loadCsv(file, options), (error: unknown) => {
    assert.ok(error instanceof DataError, `not a DataError: ${String(error)}`);
    assert.equal(error.message, message);
    assert.ok(!error.message.includes('\n'), 'one line');
    assert.equal(error.file, file);
    return true;
  });
}

const irisHeader = 'sepal_length,sepal_width,petal_length,petal_width,species\n';
const irisRow = '5.1,3.5,1.4,0.2,setosa\n';
/** Options under which every feature cell must be a number: a pixel CSV of 1 x h x w. */
const pixels = (h: number, w: number): CsvOptions => ({ imageShape: [1, h, w] });
/** An encoding as model files stored it before issue 13. */
function oldStyle(encoding: CsvEncoding): CsvEncoding {
  const { missingMarkers: _markers, task: _task, leftOut: _leftOut, ...rest } = encoding;
  return rest;
}

describe('malformed CSV', () => {
  test('a non-numeric cell names file, row (header line = row 1) and column', async () => {
    const text = irisHeader + irisRow.repeat(15) + '5.0,abc,1.4,0.2,setosa\n';
    await rejects('file.csv', text, 'file.csv, row 17, column "sepal_width" (2): "abc" is not a number', pixels(2, 2));
  });

  test('all cell problems at once: the first named, the rest counted and listed', async () => {
    const text = irisHeader + irisRow + '5.0,abc,1.4,0.2,setosa\n' + irisRow + 'x,3,1.4,?,setosa\n';
    await rejects('many.csv', text,
      'many.csv, row 3, column "sepal_width" (2): "abc" is not a number (3 cell problems in all; also row 5, column "sepal_length" (1): "x" is not a number; row 5, column "petal_width" (4): "?" is not a number)',
      pixels(2, 2));
  });

  test('every kind of bad number', async () => {
    for (const [cell, detail] of [
      ['', '"" is not a number (empty cell)'],
      ['1.2.3', '"1.2.3" is not a number'],
      ['0x10', '"0x10" is not a number'],
      ['NaN', '"NaN" is not a number'],
      ['1,5', '"1,5" is not a number'],
      ['1e39', '"1e39" is out of the 32-bit float range'],
    ]) {
      const quoted = cell.includes(',') ? `"${cell}"` : cell;
      await rejects('bad.csv', `a,b,label\n1,2,x\n3,${quoted},y\n`, `bad.csv, row 3, column "b" (2): ${detail}`, pixels(1, 2));
    }
  });

  test('without a header the column is named by number', async () => {
    await rejects('noheader.csv', '1,2,x\n3,4,y\n5,six,z\n', 'noheader.csv, row 3, column 2: "six" is not a number', pixels(1, 2));
  });

  test('rows count lines: blank lines and quoted line breaks included', async () => {
    const text = 'note,a,label\n"one\ntwo",1,x\n\n"three",2,y\nfour,oops,z\n';
    await rejects('lines.csv', text, 'lines.csv, row 6, column "a" (2): "oops" is not a number', { ignoreColumns: ['note'], ...pixels(1, 1) });
    const training = await loadCsv(path.join(folder, 'lines.csv'), { categorical: ['note'], ignoreColumns: ['a'] });
    await rejects('lines2.csv', text, 'lines2.csv, row 6, column "a" (2): "oops" is not a number',
      { encoding: { ...oldStyle(training.encoding), columns: [...training.encoding.columns, { kind: 'numeric', name: 'a', index: 1 }] } });
  });

  test('line counting holds past the header-detection sample (200 rows)', async () => {
    const body = Array.from({ length: 260 }, (_, i) => (i === 220 ? `"two\nlines",${i},x` : i === 240 ? `t,bad,x` : `t,${i},x`));
    // Header = line 1, body row i on line i + 2, plus one for the quoted line break before row 240.
    await rejects('late.csv', `note,a,label\n${body.join('\n')}\n`, 'late.csv, row 243, column "a" (2): "bad" is not a number', { ignoreColumns: [0], ...pixels(1, 1) });
  });

  test('a cell holding a line break stays on one line in the message', async () => {
    await rejects('multiline.csv', 'a,b,label\n1,"2\n3",x\n', 'multiline.csv, row 2, column "b" (2): "2\\n3" is not a number', pixels(1, 2));
  });

  test('ragged rows', async () => {
    await rejects('ragged.csv', irisHeader + irisRow + '5.1,3.5,1.4,setosa\n', 'ragged.csv, row 3: 4 field(s), expected 5 like the header');
    await rejects('long.csv', '1,2,x\n3,4,y,\n', 'long.csv, row 2: 4 field(s), expected 3 like the first row');
  });

  test('empty, blank and header-only files', async () => {
    await rejects('empty.csv', '', 'empty.csv: the file is empty');
    await rejects('blank.csv', '\n\n  \n', 'blank.csv: the file is empty');
    await rejects('bom.csv', '\uFEFF', 'bom.csv: the file is empty');
    await rejects('header.csv', irisHeader, 'header.csv: the file has a header row but no data rows');
    await rejects('header2.csv', irisHeader + '\n\n', 'header2.csv: the file has a header row but no data rows');
  });

  test('unterminated and malformed quotes', async () => {
    await rejects('open.csv', 'a,b,label\n1,2,x\n3,"4,y\n5,6,z\n', 'open.csv, row 3: a quoted field is never closed');
    await rejects('stray.csv', 'a,b,label\n1,"2"3,x\n', 'stray.csv, row 2: malformed quotes (Trailing quote on quoted field is malformed)');
  });

  test('label problems', async () => {
    await rejects('emptylabel.csv', 'a,label\n1,\n2, \n3,NA\n', 'emptylabel.csv: every row\'s label is missing (3 rows, e.g. row 2)');
    await rejects('unknown.csv', irisHeader + irisRow + '5.1,3.5,1.4,0.2,rose\n',
      'unknown.csv, row 3, column "species" (5): label "rose" is not one of the model\'s classes (setosa, versicolor, virginica)',
      { classLabels: ['setosa', 'versicolor', 'virginica'] });
  });

  test('column choices that do not exist', async () => {
    await rejects('name.csv', irisHeader + irisRow, 'name.csv: no label column named "kind" (columns: sepal_length, sepal_width, petal_length, petal_width, species)',
      { labelColumn: 'kind' });
    await rejects('index.csv', irisHeader + irisRow, 'index.csv: label column index 5 is outside the 5 column(s) (0..4, or -1..-5 from the end)',
      { labelColumn: 5 });
    await rejects('neg.csv', irisHeader + irisRow, 'neg.csv: ignored column index -6 is outside the 5 column(s) (0..4, or -1..-5 from the end)',
      { ignoreColumns: [-6] });
    await rejects('byname.csv', '1,2,x\n', 'byname.csv: the file has no header row, so the label column "species" cannot be found by name; give its 0-based index',
      { labelColumn: 'species' });
    await rejects('labelcat.csv', irisHeader + irisRow, 'labelcat.csv: the label column "species" (5) cannot also be categorical (labels are classes already)',
      { categorical: ['species'] });
    await rejects('nofeatures.csv', 'a,label\n1,x\n', 'nofeatures.csv: no feature columns: the file has 2 column(s) and all are the label or ignored',
      { ignoreColumns: ['a'] });
  });

  test('image shape that does not match the feature count', async () => {
    await rejects('pixels.csv', 'label,p0,p1,p2\n1,0,0,0\n', 'pixels.csv: image shape 1x2x2 needs 4 feature columns, found 3',
      { labelColumn: 0, imageShape: [1, 2, 2] });
  });

  test('evaluation against a training encoding', async () => {
    const trainingFile = path.join(folder, 'train.csv');
    fs.writeFileSync(trainingFile, 'color,w,label\nred,1,a\nblue,2,b\n');
    const training = await loadCsv(trainingFile, { categorical: ['color'] });
    // An encoding from before issue 13 reads strictly; a current one gives unseen categories all-zero features.
    await rejects('unseen.csv', 'color,w,label\nred,1,a\npurple,2,b\n',
      'unseen.csv, row 3, column "color" (1): category "purple" was not seen in the training data (blue, red)', { encoding: oldStyle(training.encoding) });
    const lenient = await loadCsv(path.join(folder, 'unseen.csv'), { encoding: training.encoding });
    assert.deepEqual(Array.from(lenient.features), [0, 1, 1, 0, 0, 2]);
    assert.deepEqual(lenient.notes, ['column "color": 1 cell with a category not seen in training ("purple") get all-zero features']);
    await rejects('missing.csv', 'colour,w,label\nred,1,a\n',
      'missing.csv: column "color" of the training data is missing (columns: colour, w, label)', { encoding: training.encoding });
    await rejects('newclass.csv', 'color,w,label\nred,1,c\n',
      'newclass.csv, row 2, column "label" (3): label "c" is not one of the model\'s classes (a, b)', { encoding: training.encoding });
    await rejects('nolabel.csv', 'color,w\nred,1\n',
      'nolabel.csv: label column "label" of the training data is missing (columns: color, w)', { encoding: training.encoding });
    const unlabeled = await loadCsv(path.join(folder, 'nolabel.csv'), { encoding: training.encoding, unlabeled: true });
    assert.deepEqual(Array.from(unlabeled.labels), [-1]);
    await rejects('narrow.csv', 'red,1\n', 'narrow.csv: 2 columns per row, but the training data had 3', { encoding: training.encoding });
  });

  test('missing file', async () => {
    await assert.rejects(loadCsv(path.join(folder, 'nope.csv')), { name: 'DataError', message: 'nope.csv: file not found' });
  });
});
