// The defaults of a small regression table (fewer than smallTableRows rows): weight decay 0.3 and no
// validation share, unless the user chose them; larger tables, classification and images keep theirs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultValSplitFor, smallRegressionWeightDecay, smallTableRows, tabularWeightDecay } from '../../../app/core/model/defaults';
import { buildModelSpec } from '../../../app/services/modelSpecs';

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
