import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareStandings, epochsText, firstRungEpochs, halvingPlan, plannedEpochs, promote } from '../../../app/core/search/halving';

test('successive halving: each rung keeps the best 1/eta and trains eta times longer, up to the most epochs', () => {
  assert.deepEqual(halvingPlan(27, 1, 9, 3), [{ epochs: 1, trials: 27 }, { epochs: 3, trials: 9 }, { epochs: 9, trials: 3 }]);
  assert.deepEqual(halvingPlan(10, 1, 9, 3), [{ epochs: 1, trials: 10 }, { epochs: 3, trials: 3 }, { epochs: 9, trials: 1 }]);
  // the last rung trains the most epochs, the rungs between spaced evenly on a log scale; a single trial ends the plan
  assert.deepEqual(halvingPlan(8, 2, 5, 2), [{ epochs: 2, trials: 8 }, { epochs: 3, trials: 4 }, { epochs: 5, trials: 2 }]);
  assert.deepEqual(halvingPlan(1, 1, 9, 3), [{ epochs: 1, trials: 1 }]);
  assert.deepEqual(halvingPlan(5, 3, 3, 3), [{ epochs: 3, trials: 5 }]);
  assert.equal(plannedEpochs(halvingPlan(27, 1, 9, 3)), 27 + 27 + 27);
});

test('a first rung below one epoch screens on a share of the data; the products land on whole epochs', () => {
  assert.deepEqual(halvingPlan(100, 1 / 9, 9, 3), [
    { epochs: 1 / 9, trials: 100 }, { epochs: 0.3333, trials: 33 }, { epochs: 1, trials: 11 }, { epochs: 3, trials: 3 }, { epochs: 9, trials: 1 },
  ]);
  assert.deepEqual(halvingPlan(8, 0.2, 2, 2).map((rung) => rung.epochs), [0.2, 0.4309, 0.9283, 2]);
  assert.deepEqual(halvingPlan(8, 0.4, 2, 2).map((rung) => rung.epochs), [0.4, 0.684, 1, 2]);
  assert.deepEqual(halvingPlan(27, 0.5, 180, 3).map((rung) => rung.epochs), [0.5, 4, 25, 180]);
  assert.equal(firstRungEpochs(100, 9, 3, 54000), 0.1111);
  assert.equal(firstRungEpochs(27, 9, 3, 54000), 0.3333);
  assert.equal(firstRungEpochs(1, 9, 3, 54000), 9);
  assert.equal(firstRungEpochs(100, 9, 3, 5400), 0.3704, 'at least 2000 examples a trial');
  assert.equal(firstRungEpochs(27, 180, 3, 100), 20, 'small data: whole epochs, at least 2000 examples');
  assert.equal(firstRungEpochs(27, 180, 3, 100, 500), 7, '180 / 27, to whole epochs');
  assert.deepEqual([epochsText(1 / 9), epochsText(0.3333), epochsText(0.15), epochsText(1), epochsText(3)], ['1/9 epoch', '1/3 epoch', '0.15 epoch', '1 epoch', '3 epochs']);
});

test('whatever the ends, the trials and eta, the last rung trains the most epochs and the epochs grow', () => {
  for (const trials of [1, 2, 5, 9, 27, 100, 243]) {
    for (const eta of [2, 3, 4]) {
      for (const [min, max] of [[1, 9], [0.1111, 9], [0.125, 10], [0.74, 20], [1, 108], [7, 180], [0.5, 180], [2, 5]]) {
        const rungs = halvingPlan(trials, min, max, eta);
        const label = `${trials} trials, eta ${eta}, ${min} to ${max}`;
        if (rungs.length > 1) assert.equal(rungs[rungs.length - 1].epochs, max, label);
        rungs.slice(1).forEach((rung, i) => {
          assert.ok(rung.epochs >= rungs[i].epochs && rung.trials <= rungs[i].trials, label);
          assert.ok(rung.epochs < 1 || Number.isInteger(rung.epochs), `${label}: whole epochs from 1 on`);
        });
      }
    }
  }
});

test('a halving plan refuses settings it cannot use, naming them', () => {
  assert.throws(() => halvingPlan(0, 1, 9, 3), /trials must be a whole number of at least 1, got 0/);
  assert.throws(() => halvingPlan(9, 4, 2, 3), /0 < min <= max, got 4 and 2/);
  assert.throws(() => halvingPlan(9, 1.5, 9, 3), /whole numbers .* got 1.5 and 9/);
  assert.throws(() => halvingPlan(9, 0, 9, 3), /got 0 and 9/);
  assert.throws(() => halvingPlan(9, 0.5, 2.5, 3), /got 0.5 and 2.5/);
  assert.throws(() => halvingPlan(9, 1, 9, 1), /eta .* at least 2, got 1/);
});

test('promotion: the higher score first; ties to the lower validation loss, then the earlier trial; a diverged trial last', () => {
  const standings = [
    { trial: 1, score: 0.9, validationLoss: 0.3 },
    { trial: 2, score: -Infinity, validationLoss: Infinity },
    { trial: 3, score: 0.95, validationLoss: 0.5 },
    { trial: 4, score: 0.9, validationLoss: 0.2 },
    { trial: 5, score: 0.9, validationLoss: 0.2 },
  ];
  assert.deepEqual(promote(standings, 3).map((s) => s.trial), [3, 4, 5]);
  assert.deepEqual([...standings].sort(compareStandings).map((s) => s.trial), [3, 4, 5, 1, 2]);
});
