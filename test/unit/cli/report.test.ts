import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { formatRegressionReport, formatReport, terminalMatrixClasses } from '../../../app/cli/report';
import { classificationReport } from '../../../app/core/metrics/classification';
import { regressionReport } from '../../../app/core/metrics/regression';

describe('terminal reports', () => {
  test('a small confusion matrix is printed whole', () => {
    const text = formatReport(classificationReport([0, 1, 1], [0, 1, 0], 2, ['cat', 'dog']));
    assert.match(text, /confusion matrix \(rows: true class, columns: predicted\)/);
    assert.match(text, /dog\s+1\s+1/);
  });

  test('a matrix wider than a terminal lists its largest confusions instead, so its size does not grow with the classes', () => {
    const classes = 300;
    const truth = Array.from({ length: 600 }, (_, i) => i % classes);
    const predicted = truth.map((t, i) => (i < 30 ? (t + 1) % classes : t));
    const text = formatReport(classificationReport(truth, predicted, classes));
    assert.ok(classes > terminalMatrixClasses);
    assert.match(text, /300 classes, too wide for a terminal .*\nthe 20 largest of 30 confusions:/);
    const matrixLines = text.split('\n').slice(text.split('\n').findIndex((line) => line.startsWith('confusion matrix')));
    assert.equal(matrixLines.length, 2 + 1 + 20);
    assert.ok(matrixLines.every((line) => line.length < 80), 'every line fits a terminal');
  });

  test('a regression report names MAPE as not available when a true value is 0', () => {
    const text = formatRegressionReport(regressionReport([0, 2, 4], [1, 2, 4]));
    assert.match(text, /^R² 0\.8750 {3}MAE 0\.333333 {3}RMSE 0\.57735 {3}MAPE n\/a \(a true value is 0\)$/);
  });

  test('several targets get a row each', () => {
    const text = formatRegressionReport(regressionReport([1, 10, 2, 20], [1, 11, 2, 19], 2, ['a', 'b']), 0.25);
    assert.match(text, /loss 0\.2500/);
    assert.match(text, /\nb\s+0\.9600\s+1\s+1\s+7\.50 %/);
  });
});
