// Names and plain words (issue 14, item 5 and part of 3): an uploaded IDX pair with its own test pair and
// named classes, presets by human name with the reason a preset cannot be used in its button, a layer at fault
// named and marked in the editor without command-line syntax, an empty file called empty, and a favicon.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe } from 'node:test';
import { encodeIdx } from '../../app/core/data/idx';
import { skipWithoutBrowser } from './support/browser';
import { sequentialSteps } from './support/steps';
import { useStudioWithScratch } from './support/studio';
import { datasetTab, readDatasetSummary, readSplitCounts } from './flows/data';
import { choosePreset, layerRow, setLayerField } from './flows/model';
import { eventually, goTo, section } from './support/ui';

/** `count` 4x4 images; class k lights row k. */
function writeIdxPair(dir: string, prefix: string, count: number): void {
  const labels = Uint8Array.from({ length: count }, (_, i) => i % 3);
  const pixels = new Uint8Array(count * 16);
  labels.forEach((label, n) => pixels.fill(255, n * 16 + label * 4, n * 16 + label * 4 + 4));
  fs.writeFileSync(path.join(dir, `${prefix}-images-idx3-ubyte`), encodeIdx([count, 4, 4], pixels));
  fs.writeFileSync(path.join(dir, `${prefix}-labels-idx1-ubyte`), encodeIdx([count], labels));
}

describe('names and plain words', { skip: skipWithoutBrowser() }, () => {
  const scratch = useStudioWithScratch('names', (dir) => {
    writeIdxPair(dir, 'rows', 60);
    writeIdxPair(dir, 'rows-test', 9);
    fs.writeFileSync(path.join(dir, 'empty.csv'), '');
  });
  const page = () => scratch.studio!.page;
  const step = sequentialSteps(() => scratch.studio);
  const file = (name: string) => path.join(scratch.dir, name);

  async function choose(button: string, name: string): Promise<void> {
    const chooser = page().waitForEvent('filechooser');
    await page().getByRole('button', { name: button, exact: true }).click();
    await (await chooser).setFiles(file(name));
  }

  step('the page has an SVG favicon, and nothing it asked for was missing', 20_000, async () => {
    const href = await page().locator('link[rel="icon"]').getAttribute('href');
    assert.ok(href, 'an icon link');
    const response = await page().request.get(new URL(href!, page().url()).toString());
    assert.equal(response.status(), 200);
    assert.equal(response.headers()['content-type'], 'image/svg+xml');
    assert.deepEqual(scratch.studio!.pageErrors.filter((line) => line.startsWith('HTTP')), []);
  });

  step('an empty CSV is called empty', 20_000, async () => {
    await goTo(page(), 'Data');
    const chooser = page().waitForEvent('filechooser');
    await page().getByRole('button', { name: 'Choose a file…' }).click();
    await (await chooser).setFiles(file('empty.csv'));
    await page().getByRole('alert').filter({ hasText: 'empty.csv is empty.' }).waitFor();
    assert.equal(await page().getByText(/at least two columns/).count(), 0);
    await page().getByRole('button', { name: 'Cancel' }).click().catch(() => undefined);
  });

  step('an IDX pair with its test pair opens as one dataset whose test set is the pair', 30_000, async () => {
    await choose('Choose the images file', 'rows-images-idx3-ubyte');
    await choose('Choose the labels file', 'rows-labels-idx1-ubyte');
    await page().getByRole('checkbox', { name: /Add a separate test pair/ }).check();
    await choose('Choose the test images file', 'rows-test-images-idx3-ubyte');
    await choose('Choose the test labels file', 'rows-test-labels-idx1-ubyte');
    await page().getByRole('button', { name: 'Open IDX pair with test pair' }).click();
    await datasetTab(page(), 'rows-images-idx3-ubyte').and(page().locator('[aria-pressed="true"]')).waitFor();
    assert.equal(await datasetTab(page(), 'rows-test-images-idx3-ubyte').count(), 0, 'the test pair is no dataset of its own');
    const summary = await readDatasetSummary(page());
    assert.equal(summary['Test set'], 'rows-test-images-idx3-ubyte (9 images)');
    await eventually(async () => assert.equal((await readSplitCounts(page()))['Test (separate)'], 9));
  });

  step('the classes take names; a wrong list is refused beside the field', 20_000, async () => {
    const field = page().getByRole('textbox', { name: /^Class names/ });
    await field.fill('top, middle');
    await page().getByRole('button', { name: 'Rename classes' }).click();
    await page().getByRole('alert').filter({ hasText: '3 class names needed (one per class), got 2' }).waitFor();
    assert.equal(await field.getAttribute('aria-invalid'), 'true');
    await field.fill('top, middle, bottom');
    await page().getByRole('button', { name: 'Rename classes' }).click();
    const bars = page().getByRole('list', { name: 'Examples per class' });
    await eventually(async () => assert.match((await bars.textContent()) ?? '', /top.*middle.*bottom/s));
    await eventually(async () => assert.ok((await section(page(), 'Preview').getByLabel(/^an image labelled (top|middle|bottom)$/).count()) >= 3));
  });

  step('presets by human name; one that cannot be used says why in its button', 20_000, async () => {
    await goTo(page(), 'Model');
    const presets = page().getByRole('group', { name: 'Presets' });
    await presets.getByRole('button', { name: /^Small MLP One hidden layer of 128 units/ }).waitFor();
    assert.equal(await presets.getByRole('button', { name: /seed00/ }).count(), 0);
    // This machine has no GPU: the GPU presets are disabled and say so in words, not only in a tooltip.
    const fast = presets.getByRole('button', { name: /^Fast MNIST / });
    assert.equal(await fast.isDisabled(), true);
    assert.match((await fast.textContent()) ?? '', /Unavailable: needs an NVIDIA GPU/);
  });

  step('a layer at fault is named in plain words, marked and described beside its inputs', 20_000, async () => {
    await choosePreset(page(), 'Small MLP');
    const units = layerRow(page(), 2).getByRole('spinbutton', { name: 'Layer 2 units', exact: true });
    await setLayerField(page(), 2, 'units', 0);
    await units.press('Tab'); // the editor checks a field when it is left
    const message = 'Layer 2 (dense): units must be at least 1';
    const alert = page().getByRole('alert').filter({ hasText: message });
    await alert.waitFor();
    assert.equal(await page().getByText(/--layers|item \d/).count(), 0, 'no command-line syntax');
    assert.equal(await units.getAttribute('aria-invalid'), 'true');
    assert.equal(await units.getAttribute('aria-describedby'), await alert.getAttribute('id'));
    assert.ok(await alert.isVisible());
    await setLayerField(page(), 2, 'units', 16);
    await units.press('Tab');
    await alert.waitFor({ state: 'detached' });
    assert.equal(await units.getAttribute('aria-invalid'), null);
  });
});
