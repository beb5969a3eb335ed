// scikit-learn's own CSV files in the Data screen: breast_cancer.csv starts with `569,30,malignant,benign`,
// a preamble and not a header. The preview skips it as the loader does, so the columns shown (31, the last one
// the label) are the columns opened; before, the preview took it for a 4-name header and opening failed.
import { describe } from 'node:test';
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { skipWithoutBrowser } from './support/browser';
import { repoRoot } from './support/serve';
import { sequentialSteps } from './support/steps';
import { useStudioWithScratch } from './support/studio';
import { chooseCsv, datasetTab, readDatasetSummary } from './flows/data';

const file = path.join(repoRoot, 'test', 'fixtures', 'data', 'sklearn', 'breast_cancer_head.csv');

describe("scikit-learn's breast_cancer.csv: its preamble skipped in the preview and on opening", { skip: skipWithoutBrowser() }, () => {
  const scratch = useStudioWithScratch('sklearn', () => undefined);
  const step = sequentialSteps(() => scratch.studio);
  const page = () => scratch.studio!.page;

  step('the preview says what the first row is and shows 31 unnamed columns, the last one the label', 20_000, async () => {
    await chooseCsv(page(), file);
    await page().getByText(/The first row is scikit-learn’s preamble \(569 examples, 30 features; classes malignant, benign\)/).waitFor();
    assert.equal(await page().getByRole('checkbox', { name: 'First row is the header' }).isChecked(), false);
    const label = page().getByRole('combobox', { name: 'Label column' });
    const options = await label.locator('option').allTextContents();
    assert.equal(options.length, 31);
    assert.deepEqual([options[0], options[30]], ['column 1', 'column 31']);
    assert.equal(await label.inputValue(), '30');
  });

  step('it opens: 40 examples, 30 features, 2 classes', 20_000, async () => {
    await page().getByRole('button', { name: 'Open breast_cancer_head.csv' }).click();
    await datasetTab(page(), 'breast_cancer_head.csv').and(page().locator('[aria-pressed="true"]')).waitFor();
    const summary = await readDatasetSummary(page());
    assert.equal(summary['Examples'], '40');
    assert.equal(summary['Features'], '30');
    assert.equal(summary['Classes'], '2');
  });
});
