import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  classificationReport,
  classificationReportSchema,
  confusionMatrix,
} from '../../../app/core/metrics/classification';
import type { ClassificationReport } from '../../../app/core/metrics/classification';

function close(actual: number, expected: number, what: string): void {
  assert.ok(Math.abs(actual - expected) < 1e-12, `${what}: ${actual} != ${expected}`);
}

function assertNoNaN(value: unknown, where = 'report'): void {
  if (typeof value === 'number') assert.ok(Number.isFinite(value), `${where} is ${value}`);
  else if (Array.isArray(value)) value.forEach((item, i) => assertNoNaN(item, `${where}[${i}]`));
  else if (value && typeof value === 'object') for (const [key, item] of Object.entries(value)) assertNoNaN(item, `${where}.${key}`);
}

function expectClasses(report: ClassificationReport, expected: [precision: number, recall: number, f1: number, support: number][]): void {
  assert.equal(report.perClass.length, expected.length);
  expected.forEach(([precision, recall, f1, support], k) => {
    const row = report.perClass[k];
    close(row.precision, precision, `class ${k} precision`);
    close(row.recall, recall, `class ${k} recall`);
    close(row.f1, f1, `class ${k} f1`);
    assert.equal(row.support, support, `class ${k} support`);
  });
}

describe('classificationReport', () => {
  test('three classes, worked by hand', () => {
    // true:      0 0 0 0 1 1 1 2 2 2
    // predicted: 0 0 1 2 1 1 0 2 2 1
    // confusion (rows true, columns predicted):
    //   true 0: [2 1 1]  support 4
    //   true 1: [1 2 0]  support 3
    //   true 2: [0 1 2]  support 3
    //   column sums (predicted): 3 4 3; diagonal 2 2 2 -> accuracy 6/10
    // class 0: P = 2/3, R = 2/4 = 1/2, F1 = 2PR/(P+R) = (2/3)/(7/6) = 4/7
    // class 1: P = 2/4 = 1/2, R = 2/3,   F1 = 4/7
    // class 2: P = 2/3, R = 2/3,         F1 = 2/3
    // macro:    P = (2/3 + 1/2 + 2/3)/3 = 11/18, R = 11/18, F1 = (4/7 + 4/7 + 2/3)/3 = 38/63
    // weighted: P = (4*2/3 + 3*1/2 + 3*2/3)/10 = 37/60, R = (4*1/2 + 3*2/3 + 3*2/3)/10 = 6/10 (= accuracy),
    //           F1 = (4*4/7 + 3*4/7 + 3*2/3)/10 = 6/10
    const report = classificationReport([0, 0, 0, 0, 1, 1, 1, 2, 2, 2], [0, 0, 1, 2, 1, 1, 0, 2, 2, 1], 3, ['cat', 'dog', 'eel']);
    assert.deepEqual(report.confusion, [[2, 1, 1], [1, 2, 0], [0, 1, 2]]);
    assert.deepEqual(report.labels, ['cat', 'dog', 'eel']);
    assert.deepEqual(report.perClass.map((row) => row.label), ['cat', 'dog', 'eel']);
    close(report.accuracy, 0.6, 'accuracy');
    expectClasses(report, [[2 / 3, 1 / 2, 4 / 7, 4], [1 / 2, 2 / 3, 4 / 7, 3], [2 / 3, 2 / 3, 2 / 3, 3]]);
    close(report.macro.precision, 11 / 18, 'macro precision');
    close(report.macro.recall, 11 / 18, 'macro recall');
    close(report.macro.f1, 38 / 63, 'macro f1');
    close(report.weighted.precision, 37 / 60, 'weighted precision');
    close(report.weighted.recall, 0.6, 'weighted recall');
    close(report.weighted.f1, 0.6, 'weighted f1');
    assert.ok(classificationReportSchema.safeParse(report).success);
    assert.deepEqual(Object.keys(report), ['accuracy', 'macro', 'weighted', 'perClass', 'confusion', 'labels']);
  });

  test('binary, worked by hand', () => {
    // true:      1 1 1 0 0 0 0 0
    // predicted: 1 1 0 1 0 0 0 0
    // confusion: true 0: [4 1], true 1: [1 2]; accuracy 6/8
    // class 0: P = 4/5, R = 4/5, F1 = 4/5; class 1: P = 2/3, R = 2/3, F1 = 2/3
    // macro P = R = F1 = (4/5 + 2/3)/2 = 11/15; weighted = (5*4/5 + 3*2/3)/8 = 6/8
    const report = classificationReport(Int32Array.from([1, 1, 1, 0, 0, 0, 0, 0]), Int32Array.from([1, 1, 0, 1, 0, 0, 0, 0]), 2);
    assert.deepEqual(report.confusion, [[4, 1], [1, 2]]);
    assert.deepEqual(report.labels, ['0', '1']);
    close(report.accuracy, 0.75, 'accuracy');
    expectClasses(report, [[4 / 5, 4 / 5, 4 / 5, 5], [2 / 3, 2 / 3, 2 / 3, 3]]);
    for (const key of ['precision', 'recall', 'f1'] as const) {
      close(report.macro[key], 11 / 15, `macro ${key}`);
      close(report.weighted[key], 0.75, `weighted ${key}`);
    }
  });

  test('a class never predicted has precision 0, not NaN', () => {
    // true 0 1 2, predicted 0 1 1: class 2 never predicted (P 0/0 -> 0), recall 0/1, F1 0
    // class 1: P = 1/2, R = 1, F1 = 2/3
    const report = classificationReport([0, 1, 2], [0, 1, 1], 3);
    assertNoNaN(report);
    expectClasses(report, [[1, 1, 1, 1], [1 / 2, 1, 2 / 3, 1], [0, 0, 0, 1]]);
    close(report.macro.precision, (1 + 1 / 2 + 0) / 3, 'macro precision');
    close(report.macro.f1, (1 + 2 / 3 + 0) / 3, 'macro f1');
    close(report.accuracy, 2 / 3, 'accuracy');
  });

  test('a class absent from the labels: recall 0; macro counts it, weighted does not', () => {
    // true 0 0 1 1, predicted 0 2 1 1 (K = 3): class 2 has no support but one prediction
    // class 0: P 1/1, R 1/2, F1 2/3; class 1: P 2/2, R 2/2, F1 1; class 2: P 0/1 = 0, R 0/0 -> 0, F1 0
    // macro R = (1/2 + 1 + 0)/3 = 1/2; weighted R = (2*1/2 + 2*1 + 0*0)/4 = 3/4 = accuracy
    // macro P = (1 + 1 + 0)/3 = 2/3; weighted P = (2*1 + 2*1)/4 = 1
    const report = classificationReport([0, 0, 1, 1], [0, 2, 1, 1], 3, ['a', 'b', 'c']);
    assertNoNaN(report);
    assert.deepEqual(report.confusion, [[1, 0, 1], [0, 2, 0], [0, 0, 0]]);
    expectClasses(report, [[1, 1 / 2, 2 / 3, 2], [1, 1, 1, 2], [0, 0, 0, 0]]);
    close(report.macro.recall, 1 / 2, 'macro recall');
    close(report.weighted.recall, 3 / 4, 'weighted recall');
    close(report.macro.precision, 2 / 3, 'macro precision');
    close(report.weighted.precision, 1, 'weighted precision');
    close(report.macro.f1, (2 / 3 + 1) / 3, 'macro f1');
    close(report.weighted.f1, (2 * 2 / 3 + 2 * 1) / 4, 'weighted f1');
  });

  test('empty input gives zeros, never NaN', () => {
    const report = classificationReport([], [], 2);
    assertNoNaN(report);
    assert.equal(report.accuracy, 0);
    assert.deepEqual(report.macro, { precision: 0, recall: 0, f1: 0 });
    assert.deepEqual(report.weighted, { precision: 0, recall: 0, f1: 0 });
    assert.deepEqual(report.confusion, [[0, 0], [0, 0]]);
  });

  test('perfect predictions', () => {
    const report = classificationReport([2, 0, 1, 2], [2, 0, 1, 2], 3);
    assert.equal(report.accuracy, 1);
    assert.deepEqual(report.macro, { precision: 1, recall: 1, f1: 1 });
    assert.deepEqual(report.weighted, { precision: 1, recall: 1, f1: 1 });
  });

  test('bad input is refused with a clear message', () => {
    assert.throws(() => classificationReport([0, 1], [0], 2), { message: '2 labels but 1 predictions' });
    assert.throws(() => classificationReport([0, 3], [0, 1], 3), { message: 'label 3 at sample 1 is outside 0..2' });
    assert.throws(() => classificationReport([0, 1], [0, -1], 3), { message: 'prediction -1 at sample 1 is outside 0..2' });
    assert.throws(() => classificationReport([0, 1], [0, 1], 2, ['only one']), { message: '1 class labels for 2 classes' });
    assert.throws(() => confusionMatrix([0], [0], 0), { message: 'class count 0 must be a positive integer' });
  });
});
