// CSV import of tables as users have them (issue 13): missing markers, inferred column types, dates, IDs,
// top-K categories, the task, the column report, scikit-learn's own files.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { after, describe, test } from 'node:test';
import { checkDataset } from '../../../app/core/data/dataset';
import { loadCsv, readTextHead } from '../../../app/core/data/csv';
import { commaCellToPoint, guessDecimalMark, pointCellWithoutGrouping } from '../../../app/core/data/decimalMark';
import { csvEncodingSchema } from '../../../app/core/data/encoding';
import { DataError } from '../../../app/core/data/errors';

const root = path.resolve(__dirname, '../../../..');
const sklearn = (name: string) => path.join(root, 'test/fixtures/data/sklearn', name);
const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-csv-messy-'));
after(() => fs.rmSync(folder, { recursive: true, force: true }));
let fileNumber = 0;
function csvFile(text: string): string {
  const file = path.join(folder, `messy${++fileNumber}.csv`);
  fs.writeFileSync(file, text);
  return file;
}
const column = (features: Float32Array, width: number, index: number) =>
  Array.from({ length: features.length / width }, (_, row) => features[row * width + index]);

/** n rows of: id (a run), a date, a number with markers, a category with markers, free text, a constant, label. */
function messyTable(n: number): string {
  const lines = ['customer_id,signup,age,city,comment,country,label'];
  for (let i = 0; i < n; i++) {
    const age = i % 10 === 3 ? ['NA', '?', 'N/A', ' null ', '-'][i % 5] : String(20 + (i % 37));
    const city = i % 11 === 5 ? '' : ['Paris', 'Lyon', 'Nice'][i % 3];
    lines.push(`${1000 + i},2024-${String((i % 12) + 1).padStart(2, '0')}-${String((i % 28) + 1).padStart(2, '0')},${age},${city},` +
      `this is comment number ${i} about something,FR,${i % 4 === 0 ? 'churn' : 'stay'}`);
  }
  return lines.join('\n') + '\n';
}

describe('missing values and inferred column types', () => {
  test('markers become NaN in numeric columns and all-zero blocks in categorical ones; IDs, text, constants left out; dates in parts', async () => {
    const data = await loadCsv(csvFile(messyTable(100)), { dates: 'parts' });
    checkDataset(data);
    assert.deepEqual(data.featureNames, [
      'signup.year', 'signup.month', 'signup.day', 'signup.weekday', 'age', 'city=Lyon', 'city=Nice', 'city=Paris',
    ]);
    const width = data.featureNames.length;
    const age = column(data.features, width, 4);
    assert.equal(age.filter(Number.isNaN).length, 10);
    assert.ok(Number.isNaN(age[3]) && Number.isNaN(age[93]));
    assert.equal(age[0], 20);
    const city = [5, 6, 7].map((j) => column(data.features, width, j));
    assert.deepEqual([city[0][5], city[1][5], city[2][5]], [0, 0, 0]); // row 5's city is empty
    assert.deepEqual([city[0][1], city[1][1], city[2][1]], [1, 0, 0]);
    // 2024-01-01 was a Monday (weekday 0); row 1 is 2024-02-02, a Friday.
    assert.deepEqual([0, 1, 2, 3].map((j) => data.features[j]), [2024, 1, 1, 0]);
    assert.deepEqual([0, 1, 2, 3].map((j) => data.features[width + j]), [2024, 2, 2, 4]);
    assert.deepEqual(data.notes, [
      'column "customer_id" left out (ID-like: all 100 values are distinct integers (a run 1000…1099))',
      'column "comment" left out (free text: all 100 values are distinct)',
      'column "country" left out (every value is "FR")',
    ]);
    assert.equal(data.task, 'classification');
    assert.equal(data.taskReason, 'label: 2 distinct text values → classification');
    assert.deepEqual(data.encoding.leftOut?.map((entry) => entry.name), ['customer_id', 'comment', 'country']);
    assert.deepEqual(csvEncodingSchema.parse(JSON.parse(JSON.stringify(data.encoding))), data.encoding);
  });

  test('the NA on row 4 000 counts: inference reads the whole file', async () => {
    const rows = Array.from({ length: 5000 }, (_, i) => `${i === 3998 ? 'NA' : (i * 0.5) % 17},${i % 2}`);
    const data = await loadCsv(csvFile(`x,label\n${rows.join('\n')}\n`));
    assert.ok(Number.isNaN(data.features[3998]));
    assert.equal(data.features.filter(Number.isNaN).length, 1);
  });

  test('a few non-numbers in a numeric column are missing, reported with rows; many make it categorical', async () => {
    const few = Array.from({ length: 60 }, (_, i) => `${i === 7 ? 'abc' : i === 30 ? '1e39' : i * 1.5},${i % 2}`);
    const data = await loadCsv(csvFile(`x,label\n${few.join('\n')}\n`));
    assert.deepEqual(data.featureNames, ['x']);
    assert.ok(Number.isNaN(data.features[7]) && Number.isNaN(data.features[30]));
    assert.deepEqual(data.notes, ['column "x": 2 cells are not a number and read as missing (row 9: "abc", row 32: "1e39")']);
    const many = Array.from({ length: 40 }, (_, i) => `${i % 4 === 0 ? 'low' : i % 3},${i % 2}`);
    const text = await loadCsv(csvFile(`x,label\n${many.join('\n')}\n`));
    assert.deepEqual(text.featureNames, ['x=0', 'x=1', 'x=2', 'x=low']);
  });

  test('custom markers; explicit options still win over inference', async () => {
    const file = csvFile('id,v,label\n1,-999,a\n2,5,b\n3,7,a\n');
    const data = await loadCsv(file, { missingMarkers: ['-999'] });
    assert.deepEqual(data.featureNames, ['id', 'v']);
    assert.ok(Number.isNaN(data.features[1]));
    assert.deepEqual(data.encoding.missingMarkers, ['-999']);
    const forced = await loadCsv(file, { categorical: ['v'], ignoreColumns: ['id'], missingMarkers: ['-999'] });
    assert.deepEqual(forced.featureNames, ['v=5', 'v=7']);
    assert.deepEqual(Array.from(forced.features), [0, 0, 1, 0, 0, 1]);
  });

  test('more than 30 categories: the top 30 plus "other", with a warning; later files map unseen values to "other"', async () => {
    const rows = Array.from({ length: 400 }, (_, i) => `c${i < 200 ? i % 20 : i % 60},${i % 3}`);
    const data = await loadCsv(csvFile(`kind,label\n${rows.join('\n')}\n`));
    assert.equal(data.featureNames.length, 31);
    assert.equal(data.featureNames[30], 'kind=(other)');
    assert.match(data.notes![0], /^column "kind": 60 distinct values: the 30 most frequent are kept \(\d+\.\d % of the cells\), the rest become "other"$/);
    const later = await loadCsv(csvFile('kind,label\nnever-seen,1\nc0,2\n'), { encoding: data.encoding });
    assert.equal(later.features[30], 1);
    assert.equal(later.features[31 + data.featureNames.indexOf('kind=c0')], 1);
  });

  test('dates: ignore, or parts with the hour when written; non-dates in a date column are missing', async () => {
    const rows = Array.from({ length: 30 }, (_, i) => `${i === 4 ? 'soon' : `2023-03-${String(i + 1).padStart(2, '0')}T${String(i % 24).padStart(2, '0')}:15`},${i % 2}`);
    const file = csvFile(`when,label\n${rows.join('\n')}\n`);
    const parts = await loadCsv(file, { dates: 'parts' });
    assert.deepEqual(parts.featureNames, ['when.year', 'when.month', 'when.day', 'when.weekday', 'when.hour']);
    assert.deepEqual(Array.from(parts.features.subarray(5, 10)), [2023, 3, 2, 3, 1]);
    assert.ok(Number.isNaN(parts.features[20]));
    assert.deepEqual(parts.notes, ['column "when": 1 cell is not a date and read as missing']);
    // left out by default: here no feature would remain, and the message says what the date could give
    await assert.rejects(loadCsv(file), { message: /no feature columns left: column "when" left out \(a date column; its year, month, day and weekday can be used instead\)/ });
  });

  test('an ID-named column of distinct integers is left out from a few rows on; an unnamed run needs 20', async () => {
    const ids = [907, 113, 554, 260, 731, 388, 12, 649];
    const small = await loadCsv(csvFile(`customer_id,n,x,label\n${ids.map((id, i) => `${id},${i + 1},${i % 3},${i % 2}`).join('\n')}\n`));
    assert.deepEqual(small.featureNames, ['n', 'x']);
    assert.match(small.notes!.join('\n'), /customer_id.*ID-like: all 8 values are distinct integers/);
  });

  test('rows with a missing label are dropped and counted', async () => {
    const data = await loadCsv(csvFile('x,label\n1,a\n2,\n3,NA\n4,b\n'));
    assert.equal(data.count, 2);
    assert.deepEqual(data.notes, ['2 rows left out because the label is missing (rows 3, 4)']);
  });

  test('every file reads back through the encoding it produced, with the same values', async () => {
    const file = csvFile(messyTable(60));
    const training = await loadCsv(file);
    const again = await loadCsv(file, { encoding: training.encoding });
    assert.deepEqual(Array.from(again.features).map(String), Array.from(training.features).map(String));
    assert.deepEqual(again.featureNames, training.featureNames);
  });
});

describe('task inference', () => {
  test('a numeric target with many values is regression, in original units, labels -1', async () => {
    const rows = Array.from({ length: 50 }, (_, i) => `${i % 7},${(i * 37) % 11},${100 + i * 13}`);
    const data = await loadCsv(csvFile(`a,b,price\n${rows.join('\n')}\n`));
    checkDataset(data);
    assert.equal(data.task, 'regression');
    assert.equal(data.taskReason, 'price: 50 distinct numbers → regression');
    assert.deepEqual(data.targetNames, ['price']);
    assert.deepEqual(Array.from(data.targets!.subarray(0, 3)), [100, 113, 126]);
    assert.ok(data.labels.every((label) => label === -1));
    assert.deepEqual(data.classLabels, []);
    assert.equal(data.encoding.task, 'regression');
    assert.equal(data.encoding.label, null);
    assert.deepEqual(data.encoding.targets, [{ name: 'price', index: 2 }]);
    const later = await loadCsv(csvFile('a,b,price\n1,2,3.5\n'), { encoding: data.encoding });
    assert.deepEqual(Array.from(later.targets!), [3.5]);
    const unlabeled = await loadCsv(csvFile('a,b\n1,2\n'), { encoding: data.encoding, unlabeled: true });
    assert.equal(unlabeled.targets, undefined);
    assert.deepEqual(unlabeled.targetNames, ['price']);
  });

  test('few integers or fractions: classification or regression; --task overrides; several targets', async () => {
    const small = await loadCsv(csvFile('a,y\n1,0\n2,1\n3,2\n4,1\n'));
    assert.equal(small.task, 'classification');
    assert.equal(small.taskReason, 'y: 3 distinct integers → classification');
    const fractions = await loadCsv(csvFile('a,y\n1,0.5\n2,1.5\n3,0.5\n'));
    assert.equal(fractions.task, 'regression');
    assert.equal(fractions.taskReason, 'y: 2 distinct numbers, some with a fraction → regression');
    // a small table's amounts: 6 integers, each seen once, are a number to predict, not 6 one-example classes
    const amounts = await loadCsv(csvFile('a,price\n1,175\n2,212\n3,93\n4,175\n5,68\n6,301\n7,88\n'));
    assert.equal(amounts.task, 'regression');
    assert.equal(amounts.taskReason, 'price: 6 distinct integers, 5 of them seen once → regression');
    const codes = await loadCsv(csvFile('a,code\n1,1\n2,2\n3,3\n4,4\n5,5\n6,1\n7,2\n8,3\n9,4\n10,5\n'));
    assert.equal(codes.task ?? 'classification', 'classification', 'class codes seen twice each stay classes');
    const forced = await loadCsv(csvFile('a,y\n1,0\n2,1\n3,2\n'), { task: 'regression' });
    assert.equal(forced.task, 'regression');
    assert.equal(forced.taskReason, 'y: regression as chosen (3 distinct numbers)');
    const two = await loadCsv(csvFile('a,y,z\n1,0.5,3\n2,1.5,4\n'), { targetColumns: ['y', 'z'] });
    assert.deepEqual(two.targetNames, ['y', 'z']);
    assert.deepEqual(Array.from(two.targets!), [0.5, 3, 1.5, 4]);
    assert.deepEqual(two.featureNames, ['a']);
    await assert.rejects(loadCsv(csvFile('a,y\n1,x\n2,3\n'), { task: 'regression' }), {
      message: /row 2, column "y" \(2\): target "x" is not a number \(the task is regression\)$/,
    });
  });

  test('more than 200 classes is refused with the suggestion; mostly single-example classes warn', async () => {
    const rows = Array.from({ length: 300 }, (_, i) => `${i % 9},id${i}`);
    await assert.rejects(loadCsv(csvFile(`a,code\n${rows.join('\n')}\n`)), (error: unknown) => {
      assert.ok(error instanceof DataError);
      assert.match(error.message, /the label column "code" has 300 classes, more than 200 for a classifier; is it an ID or free text\? choose another column with --label-column$/);
      return true;
    });
    const numeric = Array.from({ length: 300 }, (_, i) => `${i % 9},${i}`);
    await assert.rejects(loadCsv(csvFile(`a,n\n${numeric.join('\n')}\n`), { task: 'classification' }), {
      message: /300 classes, more than 200 for a classifier; its values are numbers: use --task regression to predict them$/,
    });
    const sparse = await loadCsv(csvFile('a,who\n1,ann\n2,bob\n3,cy\n4,ann\n'));
    assert.deepEqual(sparse.notes, ['2 of the 3 classes of "who" have a single example: a model cannot learn a class from one example']);
  });

  test('classes equal but for case are kept apart and named in a note; spaces around a label are not a class of their own', async () => {
    const rows = Array.from({ length: 40 }, (_, i) => `${i % 7},${['yes', ' yes', 'Yes ', 'no', 'NO', 'No'][i % 6]}`);
    const data = await loadCsv(csvFile(`a,answer\n${rows.join('\n')}\n`));
    assert.deepEqual(data.classLabels, ['NO', 'No', 'Yes', 'no', 'yes']);
    assert.deepEqual(data.notes, ['classes of "answer" that differ only in upper and lower case are different classes: NO / No / no; Yes / yes (correct the file if they mean the same)']);
  });
});

describe('scikit-learn files', () => {
  test('iris.csv: the n_samples,n_features,<names> first row is recognised and gives the class names', async () => {
    const iris = await loadCsv(sklearn('iris.csv'));
    assert.equal(iris.count, 150);
    assert.deepEqual(iris.featureNames, ['col1', 'col2', 'col3', 'col4']);
    assert.deepEqual(iris.classLabels, ['setosa', 'versicolor', 'virginica']);
    assert.deepEqual([0, 50, 100].map((i) => iris.labels[i]), [0, 1, 2]);
  });

  test('breast_cancer (first rows): 30 features, class names from the first row', async () => {
    const cancer = await loadCsv(sklearn('breast_cancer_head.csv'));
    assert.equal(cancer.count, 40);
    assert.equal(cancer.featureNames.length, 30);
    assert.deepEqual(cancer.classLabels, ['benign', 'malignant']);
    assert.equal(cancer.labels[0], 1); // target 0 = malignant
  });

  test('the preamble is read whatever the Data screen says of a header, unless a header it names is one', async () => {
    // the Data screen sends its header choice for the row after the preamble: none for breast_cancer
    const said = await loadCsv(sklearn('breast_cancer_head.csv'), { header: false, labelColumn: 30 });
    assert.equal(said.featureNames.length, 30);
    assert.deepEqual(said.classLabels, ['benign', 'malignant']);
    // boston's second row is the header: with header: true the first row is still the preamble
    const boston = await loadCsv(sklearn('boston_head.csv'), { header: true });
    assert.equal(boston.featureNames[0], 'CRIM');
    // a header said present whose first two names are integers stays the header when data follows it
    const named = await loadCsv(csvFile('1,2,label\n0.5,1.5,a\n0.25,2.5,b\n1.5,0.5,a\n'), { header: true });
    assert.deepEqual(named.featureNames, ['1', '2']);
    assert.deepEqual(named.classLabels, ['a', 'b']);
  });

  test('boston (first rows): the second row is the header; MEDV is a regression target', async () => {
    const boston = await loadCsv(sklearn('boston_head.csv'));
    assert.equal(boston.count, 28);
    assert.equal(boston.featureNames[0], 'CRIM');
    assert.equal(boston.task, 'regression');
    assert.deepEqual(boston.targetNames, ['MEDV']);
  });

  test('space-separated files: linnerud and diabetes', async () => {
    const linnerud = await loadCsv(sklearn('linnerud_exercise.csv'), { labelColumn: 'Jumps' });
    assert.equal(linnerud.encoding.delimiter, ' ');
    assert.deepEqual(linnerud.featureNames, ['Chins', 'Situps']);
    assert.equal(linnerud.count, 20);
    const diabetes = await loadCsv(sklearn('diabetes_head.txt'), { unlabeled: true });
    assert.equal(diabetes.featureNames.length, 10);
    assert.equal(diabetes.features[0], 59);
  });
});

describe('column report', () => {
  test('types, missing shares, distinct counts, ranges, histograms and top values per column', async () => {
    const data = await loadCsv(csvFile(messyTable(100)), { report: true, dates: 'parts' });
    const byName = new Map(data.report!.map((entry) => [entry.name, entry]));
    assert.deepEqual(data.report!.map((entry) => [entry.name, entry.type, entry.role]), [
      ['customer_id', 'id', 'left out'], ['signup', 'date', 'feature'], ['age', 'numeric', 'feature'], ['city', 'categorical', 'feature'],
      ['comment', 'text', 'left out'], ['country', 'constant', 'left out'], ['label', 'categorical', 'label'],
    ]);
    const age = byName.get('age')!;
    assert.equal(age.missing, 10);
    assert.equal(age.missingShare, 0.1);
    assert.equal(age.min, 20);
    assert.equal(age.max, 56);
    assert.equal(age.histogram!.counts.reduce((a, b) => a + b, 0), 90);
    assert.equal(age.histogram!.counts.length, 10);
    const city = byName.get('city')!;
    assert.equal(city.distinct, 3);
    assert.equal(city.features, 3);
    assert.deepEqual(city.top!.map((entry) => entry.value).sort(), ['Lyon', 'Nice', 'Paris']);
    assert.ok(city.top![0].count >= city.top![2].count);
    assert.deepEqual(byName.get('label')!.notes, ['label: 2 distinct text values → classification']);
    const ignored = await loadCsv(csvFile(messyTable(30)), { report: true, ignoreColumns: ['age'] });
    const ageIgnored = ignored.report!.find((entry) => entry.name === 'age')!;
    assert.equal(ageIgnored.role, 'left out');
    assert.equal(ageIgnored.missing, 3);
    assert.ok(!ignored.featureNames.includes('age'));
  });
});

describe('decimal commas (European spreadsheets: 162,5 with ";" between fields)', () => {
  test('the guess: a comma only with another delimiter, some comma numbers and no point decimals but grouping', () => {
    assert.equal(guessDecimalMark([['162,5', '7'], ['1,25', '8']], ';'), ',');
    assert.equal(guessDecimalMark([['162,5', '1.234'], ['1.234,5', '8']], '\t'), ',', 'thousands grouped with points');
    assert.equal(guessDecimalMark([['162,5', '1.5']], ';'), '.', 'a point decimal means points');
    assert.equal(guessDecimalMark([['7', '8']], ';'), '.', 'no comma number: points');
    assert.equal(guessDecimalMark([['"1,5"', '2']], ','), '.', 'a comma-delimited file keeps points unless told');
    assert.deepEqual(['162,5', '-0,25', ',5', '1,5e-3', '1.234,5', '1.234.567', 'a,b', '1,2,3', '12'].map(commaCellToPoint),
      ['162.5', '-0.25', '.5', '1.5e-3', '1234.5', '1234567', 'a,b', '1,2,3', '12']);
    assert.equal(guessDecimalMark([['1,234', '7'], ['12,500', '8']], '\t'), '.', '1,234 could be thousands: it decides nothing');
    assert.equal(guessDecimalMark([['1,234', '0,125']], '\t'), ',', '0,125 cannot be thousands');
  });

  test('thousands grouped with commas in a decimal-point file ("1,234.5", as Excel writes formatted numbers) are numbers', async () => {
    assert.deepEqual(['1,234', '-12,345,678.9', '0,125', '1,23', '1,2345', 'a,bcd', '123'].map(pointCellWithoutGrouping),
      ['1234', '-12345678.9', '0,125', '1,23', '1,2345', 'a,bcd', '123']);
    const lines = ['price,rooms,label', ...Array.from({ length: 30 }, (_, i) => `"${(1000 + i * 37).toLocaleString('en-US')}.50",${i % 5},${i % 2 ? 'a' : 'b'}`)];
    const data = await loadCsv(csvFile(lines.join('\n') + '\n'), { report: true });
    assert.equal(data.report![0].type, 'numeric');
    assert.equal(data.features[0], 1000.5);
    assert.equal(data.features[2 * 29], Math.fround(1000 + 29 * 37 + 0.5));
  });

  test('a semicolon file with decimal commas loads its columns as numbers and says so; "." read as asked', async () => {
    const lines = ['Größe;Gewicht;Klasse'];
    for (let i = 0; i < 40; i++) lines.push(`${160 + i},${i % 10};${(50 + i * 1.5).toFixed(1).replace('.', ',')};${i % 2 ? 'a' : 'b'}`);
    const file = csvFile('\ufeff' + lines.join('\r\n') + '\r\n');
    const data = await loadCsv(file, { report: true });
    assert.deepEqual(data.report!.map((entry) => [entry.name, entry.type]), [['Größe', 'numeric'], ['Gewicht', 'numeric'], ['Klasse', 'categorical']]);
    assert.deepEqual(Array.from(data.features.slice(0, 4)), [160, 50, 161.1, 51.5].map(Math.fround));
    assert.ok(data.notes!.some((note) => note.includes('decimal comma')), data.notes!.join('; '));
    // read with points, the same cells are 40 distinct texts each: ID-like, nothing left to learn from
    await assert.rejects(loadCsv(file, { decimal: '.' }), /no feature columns left: column "Größe" left out \(ID-like/);
  });
});

describe('lines as spreadsheet programs write them', () => {
  test('a delimiter at the end of every line is not an empty last column (the label stays the last named column)', async () => {
    const lines = ['a,b,label,', ...Array.from({ length: 30 }, (_, i) => `${i % 7},${(i * 0.37) % 3},${i % 3 ? 'x' : 'y'},`)];
    const data = await loadCsv(csvFile(lines.join('\n') + '\n'), { report: true });
    assert.deepEqual(data.report!.map((entry) => [entry.name, entry.role]), [['a', 'feature'], ['b', 'feature'], ['label', 'label']]);
    assert.deepEqual(data.classLabels, ['x', 'y']);
    assert.ok(data.notes!.includes('every line ends with a delimiter: the empty field after it is not a column'), data.notes!.join('; '));
    // a named last column that is mostly empty is a column, not a trailing delimiter
    const named = await loadCsv(csvFile('a,label,comment\n1,x,\n2,y,\n3,x,ok\n'), { labelColumn: 'label', report: true });
    assert.equal(named.report!.length, 3);
  });

  test("Excel's sep=; first line names the delimiter and is skipped; rows keep their line numbers", async () => {
    const lines = ['sep=;', 'a;b;label', ...Array.from({ length: 30 }, (_, i) => `${i % 7};${i % 5};${i % 3 ? 'x' : 'y'}`)];
    lines[9] = '1;2';
    const file = csvFile(lines.join('\r\n') + '\r\n');
    await assert.rejects(loadCsv(file), /row 10: 2 field\(s\), expected 3 like the header/);
    lines[9] = '1;2;x';
    const data = await loadCsv(csvFile(lines.join('\r\n') + '\r\n'));
    assert.deepEqual(data.featureNames, ['a', 'b']);
    assert.equal(data.count, 30);
    assert.ok(data.notes!.includes('the first line (sep=;) names the delimiter, as Excel writes it, and is skipped'), data.notes!.join('; '));
    // also when the caller names the delimiter (the Data screen sends the one it shows)
    assert.equal((await loadCsv(csvFile(lines.join('\n')), { delimiter: ';' })).count, 30);
  });
});

describe("'#' lines at the top: a logger's notes, numpy's savetxt header", () => {
  test('notes are skipped and rows keep their line numbers; a note above a header row of its own is only a note', async () => {
    const text = '# sensor logger v2\n# units: mm, s\nx,y,label\n1,2,a\n2,3,b\n3,1,a\n4,4,b\n';
    const data = await loadCsv(csvFile(text));
    assert.deepEqual(data.featureNames, ['x', 'y']);
    assert.equal(data.count, 4);
    assert.deepEqual(data.notes, ['the first 2 lines start with # and are notes, skipped']);
    await assert.rejects(loadCsv(csvFile(text + '5,1\n')), /row 8: 2 field\(s\), expected 3 like the header/);
  });

  test("numpy's `# x,y,label` line names the columns of the numbers below it", async () => {
    const rows = Array.from({ length: 20 }, (_, i) => `${(i * 0.37) % 1},${(i * 0.61) % 1},${i % 2}.0000`);
    const data = await loadCsv(csvFile(`# x,y,label\n${rows.join('\n')}\n`), { report: true });
    assert.deepEqual(data.report!.map((entry) => [entry.name, entry.role]), [['x', 'feature'], ['y', 'feature'], ['label', 'label']]);
    assert.equal(data.count, 20);
    assert.deepEqual(data.notes, ["the first line, after its #, names the columns (as numpy's savetxt writes them)"]);
    // a '#' line that does not fit the rows below is only a note; the file then has no header
    const plain = await loadCsv(csvFile(`# generated 2026-01-01\n${rows.join('\n')}\n`));
    assert.deepEqual(plain.featureNames, ['col1', 'col2']);
    // every line starts with '#': those are the rows (colours), not notes
    const colours = Array.from({ length: 12 }, (_, i) => `#${['ff0000', '00ff00', '0000ff'][i % 3]},${i % 5},${i % 2 ? 'warm' : 'cold'}`);
    const coloured = await loadCsv(csvFile(`${colours.join('\n')}\n`));
    assert.equal(coloured.count, 12);
    assert.deepEqual(coloured.notes ?? [], []);
  });
});

describe('what the bytes say: UTF-16 text, workbooks, binary files', () => {
  const rowsText = ['a\tb\tlabel', ...Array.from({ length: 20 }, (_, i) => `${i % 7}\t${i % 3}\t${i % 2 ? 'jä' : 'nein'}`)].join('\r\n') + '\r\n';
  const bytesFile = (name: string, bytes: Buffer) => {
    const file = path.join(folder, name);
    fs.writeFileSync(file, bytes);
    return file;
  };

  test('UTF-16 little-endian with its byte order mark (Excel\'s "Unicode Text") reads like the UTF-8 file', async () => {
    const file = bytesFile('unicode.txt', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(rowsText, 'utf16le')]));
    const utf8 = await loadCsv(csvFile(rowsText));
    const utf16 = await loadCsv(file);
    assert.deepEqual(utf16.featureNames, ['a', 'b']);
    assert.deepEqual(utf16.classLabels, ['jä', 'nein']);
    assert.deepEqual(Array.from(utf16.features), Array.from(utf8.features));
    assert.deepEqual(Array.from(utf16.labels), Array.from(utf8.labels));
  });

  test('a workbook, UTF-16 big-endian and a binary file are refused with what to do', async () => {
    const zip = bytesFile('book.xlsx', Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x00, 0x00]));
    await assert.rejects(loadCsv(zip), { message: /^book\.xlsx: the file is a ZIP archive, such as an Excel \(\.xlsx\) or LibreOffice \(\.ods\) workbook, not a CSV: save the sheet as CSV/ });
    const xls = bytesFile('old.xls', Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]));
    await assert.rejects(loadCsv(xls), { message: /^old\.xls: the file is an old Excel workbook \(\.xls\), not a CSV/ });
    const bigEndian = bytesFile('be.csv', Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(rowsText, 'utf16le').swap16()]));
    await assert.rejects(loadCsv(bigEndian), { message: /^be\.csv: the file is UTF-16 big-endian text, which is not read: save it as UTF-8/ });
    const binary = bytesFile('data.csv', Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00, 0x31, 0x2c, 0x32]));
    await assert.rejects(loadCsv(binary), { message: /^data\.csv: the file is not text \(it holds zero bytes\): is it a CSV file\?/ });
  });
});

describe('gzip-compressed files (.csv.gz, as scikit-learn ships its digits)', () => {
  const rowsText = ['x,y,label', ...Array.from({ length: 30 }, (_, i) => `${(i * 13) % 17},${(i * 7) % 5},${i % 3 ? 'odd' : 'even'}`)].join('\n') + '\n';
  const gzFile = (name: string, bytes: Buffer) => {
    const file = path.join(folder, name);
    fs.writeFileSync(file, bytes);
    return file;
  };

  test('a gzip file reads like the text inside it, found by its bytes whatever its name', async () => {
    const plain = await loadCsv(csvFile(rowsText));
    for (const name of ['table.csv.gz', 'renamed.csv']) {
      const compressed = await loadCsv(gzFile(name, zlib.gzipSync(rowsText)));
      assert.deepEqual(compressed.featureNames, plain.featureNames);
      assert.deepEqual(compressed.classLabels, plain.classLabels);
      assert.deepEqual(Array.from(compressed.features), Array.from(plain.features));
      assert.deepEqual(Array.from(compressed.labels), Array.from(plain.labels));
    }
  });

  test("the head of a large gzip file is its first decompressed bytes, not all of them", async () => {
    const big = 'a,b,label\n' + Array.from({ length: 20_000 }, (_, i) => `${i},${i % 9},c${i % 4}`).join('\n') + '\n';
    const file = gzFile('big.csv.gz', zlib.gzipSync(big));
    const head = await readTextHead(file, 4096);
    assert.equal(head.gzip, true);
    assert.equal(head.whole, false);
    assert.equal(head.text, big.slice(0, 4096));
    const small = await readTextHead(gzFile('small.csv.gz', zlib.gzipSync(rowsText)));
    assert.deepEqual([small.whole, small.text], [true, rowsText]);
    assert.equal((await loadCsv(file)).count, 20_000);
  });

  test('a cut or damaged gzip file says so, by name', async () => {
    const whole = zlib.gzipSync('a,b,label\n' + Array.from({ length: 5000 }, (_, i) => `${i},${i * 3},k${i % 5}`).join('\n'));
    const cut = gzFile('cut.csv.gz', whole.subarray(0, Math.floor(whole.length / 2)));
    await assert.rejects(loadCsv(cut), (error: unknown) => {
      assert.ok(error instanceof DataError);
      assert.match(error.message, /^cut\.csv\.gz: is not a valid gzip file \(unexpected end of file\): decompress it, or compress it again$/);
      return true;
    });
    const garbage = gzFile('garbage.csv.gz', Buffer.from([0x1f, 0x8b, 0x47, 0x41, 0x52, 0x42, 0x41, 0x47, 0x45]));
    await assert.rejects(loadCsv(garbage), { message: /^garbage\.csv\.gz: is not a valid gzip file \(/ });
  });
});
