// The defaults of a small regression table (fewer than smallTableRows rows): weight decay 0.3 and no
// validation share, unless the user chose them; larger tables, classification and images keep theirs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultValSplitFor, smallRegressionWeightDecay, smallTableRows, tabularWeightDecay } from '../../../app/core/model/defaults';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildModelSpec } from '../../../app/services/modelSpecs';
import { prepareRun } from '../../../app/services/trainingSetup';

/** A 20-row regression CSV (y = x1 + 2·x2 with a little noise). */
function smallTable(): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-small-')), 'small.csv');
  const rows = Array.from({ length: 20 }, (_, i) => `${i % 7},${(i * 3) % 5},${(i % 7) + 2 * ((i * 3) % 5) + (i % 3) * 0.1}`);
  fs.writeFileSync(file, `x1,x2,y\n${rows.join('\n')}\n`);
  return file;
}

const regression = (rows: number) => ({ task: 'regression' as const, outputs: 1, rows });

describe('small regression tables', () => {
  test('fewer rows than smallTableRows: weight decay 0.3 unless chosen; more rows: the table default', () => {
    assert.equal(buildModelSpec({}, [5], regression(smallTableRows - 1)).spec.optimizer.weightDecay, smallRegressionWeightDecay);
    assert.equal(buildModelSpec({}, [5], regression(smallTableRows)).spec.optimizer.weightDecay, tabularWeightDecay);
    assert.equal(buildModelSpec({ weightDecay: 1e-3 }, [5], regression(20)).spec.optimizer.weightDecay, 1e-3, 'the user\'s choice stays');
    assert.equal(buildModelSpec({ layers: 'dense:32:relu,dense:1' }, [5], regression(20)).spec.optimizer.weightDecay, smallRegressionWeightDecay, 'own layers too');
    assert.equal(buildModelSpec({}, [5], { task: 'regression', outputs: 1 }).spec.optimizer.weightDecay, tabularWeightDecay, 'rows unknown: the table default');
    assert.equal(buildModelSpec({}, [5], 3).spec.optimizer.weightDecay, tabularWeightDecay, 'classification keeps its default');
  });

  test('the validation share: 0 for a small regression table, 0.1 otherwise', () => {
    assert.equal(defaultValSplitFor({ task: 'regression', count: 20, featureShape: [3] }), 0);
    assert.equal(defaultValSplitFor({ task: 'regression', count: 50, featureShape: [3] }), 0.1);
    assert.equal(defaultValSplitFor({ task: 'classification', count: 20, featureShape: [3] }), 0.1);
    assert.equal(defaultValSplitFor({ count: 20, featureShape: [1, 5, 5] }), 0.1, 'images never');
  });
});

describe('a run on a small regression table', () => {
  test('trains on every non-test row with weight decay 0.3, and its plan says so; chosen values are kept and not noted', async () => {
    const file = smallTable();
    try {
      const run = await prepareRun({ data: { kind: 'csv', path: file }, model: {}, epochs: 1, device: 'cpu' });
      assert.equal(run.plan.validationCount, 0);
      assert.equal(run.spec.optimizer.weightDecay, smallRegressionWeightDecay);
      assert.deepEqual(run.plan.notes, ['a small regression table (20 rows): weight decay 0.3 and no validation share by default, against over-fitting (--weight-decay, --val-split to change)']);
      const chosen = await prepareRun({ data: { kind: 'csv', path: file }, model: { weightDecay: 0.01 }, valSplit: 0.25, epochs: 1, device: 'cpu' });
      assert.ok(chosen.plan.validationCount > 0, 'the share asked for');
      assert.equal(chosen.spec.optimizer.weightDecay, 0.01);
      assert.equal(chosen.plan.notes, undefined);
    } finally {
      fs.rmSync(path.dirname(file), { recursive: true, force: true });
    }
  });
});
