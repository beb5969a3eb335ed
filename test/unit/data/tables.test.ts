// The pieces a table's run is made of: target scaling, the regression split's strata, class weights, the
// model head for a task.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Dataset } from '../../../app/core/data/dataset';
import { stratificationKeys, stratifiedSplit } from '../../../app/core/data/split';
import { fitTargetScaling, scaleTargets, unscaleOutputs } from '../../../app/core/data/targetScaling';
import { headError, toRegression } from '../../../app/core/model/head';
import { classWeightsFor } from '../../../app/services/trainingSetup';
import { buildModelSpec } from '../../../app/services/modelSpecs';

function regressionSet(targets: number[], width = 1): Dataset {
  const count = targets.length / width;
  return {
    features: new Float32Array(count), labels: new Int32Array(count).fill(-1), count, featureShape: [1], featureNames: ['x'],
    classLabels: [], source: 't.csv', task: 'regression', targets: Float32Array.from(targets),
    targetNames: Array.from({ length: width }, (_, k) => `y${k}`),
  };
}

describe('target scaling', () => {
  test('standardises each column on the training rows and turns outputs back exactly', () => {
    const set = regressionSet([100, 1, 300, 2, 500, 3], 2);
    const scaling = fitTargetScaling(set);
    assert.deepEqual(scaling.mean, [300, 2]);
    assert.ok(Math.abs(scaling.std[0] - Math.sqrt(80_000 / 3)) < 1e-9);
    const scaled = scaleTargets(scaling, set.targets!);
    assert.ok(Math.abs(scaled[0] + 1.224744871) < 1e-6 && scaled[2] === 0);
    const back = unscaleOutputs(scaling, scaled);
    back.forEach((value, i) => assert.ok(Math.abs(value - set.targets![i]) < 1e-3 * Math.max(1, Math.abs(set.targets![i]))));
  });

  test('a constant target keeps std 1, so nothing divides by zero', () => {
    assert.deepEqual(fitTargetScaling(regressionSet([7, 7, 7])).std, [1]);
  });
});

describe('splits and weights for tables', () => {
  test('a regression split spans the target: each test share comes from every decile', () => {
    const set = regressionSet(Array.from({ length: 100 }, (_, i) => i));
    const keys = stratificationKeys(set);
    assert.deepEqual([...new Set(keys)].sort((a, b) => a - b), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const split = stratifiedSplit(keys, { validation: 0, test: 0.2 }, 3);
    const deciles = new Set(Array.from(split.test, (row) => Math.floor(row / 10)));
    assert.equal(deciles.size, 10, `test rows ${[...split.test]}`);
  });

  test('balanced class weights are n / (classes · n_class) of the training split, given ones are checked', () => {
    const train: Dataset = {
      features: new Float32Array(4), labels: Int32Array.from([0, 0, 0, 1]), count: 4, featureShape: [1], featureNames: ['x'],
      classLabels: ['a', 'b'], source: 't.csv',
    };
    assert.deepEqual(classWeightsFor('balanced', train), [4 / 6, 2]);
    assert.deepEqual(classWeightsFor([1, 3], train), [1, 3]);
    assert.throws(() => classWeightsFor([1], train), /1 weight\(s\) for 2 classes \(a, b\)/);
    assert.throws(() => classWeightsFor('balanced', regressionSet([1, 2])), /classification only/);
  });
});

describe('the head of a regression model', () => {
  test('the default model and a preset get one linear unit per target and mse; a user\'s wrong width is named', () => {
    const built = buildModelSpec({}, [3], { task: 'regression', outputs: 2 }).spec;
    assert.equal(built.task, 'regression');
    assert.equal(built.loss, 'mse');
    assert.deepEqual(built.layers.at(-1), { kind: 'dense', units: 2 });
    const preset = buildModelSpec({ preset: 'mlp' }, [3], { task: 'regression', outputs: 1 }).spec;
    const head = preset.layers.at(-1);
    assert.equal(head?.kind === 'dense' ? head.units : undefined, 1);
    assert.throws(() => buildModelSpec({ layers: 'dense:8:relu,dense:3' }, [3], { task: 'regression', outputs: 1 }),
      /the last layer predicts 3 value\(s\) but the data has 1 target: give it 1 unit\(s\)/);
    assert.throws(() => buildModelSpec({ loss: 'softmax_cross_entropy' }, [3], { task: 'regression', outputs: 1 }), /regression/);
  });

  test('a classifier\'s softmax head is made linear', () => {
    const classifier = buildModelSpec({ layers: 'dense:8:relu,dense:2:softmax' }, [3], 2).spec;
    const regression = toRegression(classifier, 1, { lossChosen: false, sizeHead: true });
    assert.deepEqual(regression.layers.at(-1), { kind: 'dense', units: 1 });
    assert.equal(headError(regression, { task: 'regression', outputs: 1 }), undefined);
  });
});
