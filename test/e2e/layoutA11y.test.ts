// Every screen at laptop sizes and under axe-core: no horizontal overflow at 1024 × 768 and 1280 × 720
// (measured in the DOM), zero serious or critical axe violations in the light and the dark theme, and focus
// that follows the user's actions. The Model screen twice: with LeNet-5, and with Fast ResNet (the widest
// layer table: residual blocks), where every drop-down choice must also show its option whole. A 10-class model (the built-in MNIST, a few hundred images, one epoch on
// the CPU) must fit whole; a 100-class table (a synthetic CSV) keeps its matrix scrolling inside its own region.
// With $NNSTUDIO_AUDIT_SHOTS set to a folder, each screen is also photographed at 1024, 1280 and 1440 wide.
import { describe } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { skipWithoutBrowser } from './support/browser';
import { flowerCsv, random, regressionCsv, regressionRows, writeFile } from './support/data';
import { sequentialSteps } from './support/steps';
import { useStudioWithScratch } from './support/studio';
import { eventually, goTo, navButton, section } from './support/ui';
import {
  axeViolations,
  focusedElement,
  describeViolations,
  laptopSizes,
  measureOverflow,
  overflowProblems,
  resize,
  screenshot,
  setColorScheme,
  shotsDir,
  testSize,
  type ColorScheme,
} from './support/audit';
import { openCsv, openMnist, setSplits } from './flows/data';
import { choosePreset, layerRow, setTrainingSettings, waitModelFits } from './flows/model';
import { startTraining, waitCompleted, waitState, waitTraining } from './flows/train';
import { commonestMistake, openCell, readConfusion } from './flows/evaluate';
import { openRegressionCsv } from './flows/regression';

// MNIST: enough steps (600 images in batches of 8, 20 epochs) to pause the run and check the screen while it is live.
const plan = { flowers: 'flowers.csv', flowerRows: 300, mnistLimit: 600, epochs: 20, batchSize: 8, manyClasses: 100, rowsPerClass: 4, many: 'hundred.csv' };
const themes: ColorScheme[] = ['light', 'dark'];

/** `classes` classes of `perClass` rows each, two noisy features that tell them apart: a 100 × 100 matrix. */
function manyClassCsv(classes: number, perClass: number, seed: number): string {
  const next = random(seed);
  const lines = ['a,b,kind'];
  for (let row = 0; row < classes * perClass; row += 1) {
    const c = row % classes;
    lines.push(`${(c / 10 + next() * 0.2).toFixed(3)},${((c % 10) + next() * 0.5).toFixed(3)},kind${String(c).padStart(2, '0')}`);
  }
  return lines.join('\n') + '\n';
}

interface AuditOptions {
  /** data-scroll-region names that may scroll sideways on this screen. */
  allowedRegions?: string[];
  /** Scrolled into view before the screenshots. */
  shotTarget?: (page: Page) => ReturnType<Page['locator']>;
}

/**
 * The screen as it is now: overflow at both laptop sizes, axe in both themes; the window and theme are put
 * back afterwards. Fails with every problem found, not only the first.
 */
async function audit(page: Page, name: string, options: AuditOptions = {}): Promise<void> {
  const problems: string[] = [];
  try {
    for (const size of laptopSizes) {
      await resize(page, size);
      for (const line of overflowProblems(await measureOverflow(page), options.allowedRegions)) problems.push(`${size.width}×${size.height}: ${line}`);
    }
    for (const scheme of themes) {
      await setColorScheme(page, scheme);
      const violations = await axeViolations(page);
      if (violations.length > 0) problems.push(`axe, ${scheme} theme:\n${describeViolations(violations)}`);
    }
    const dir = shotsDir();
    if (dir) {
      for (const size of [...laptopSizes, { width: 1440, height: 900 }]) {
        await resize(page, size);
        if (options.shotTarget) await options.shotTarget(page).scrollIntoViewIfNeeded();
        for (const scheme of themes) {
          await setColorScheme(page, scheme);
          await screenshot(page, dir, name, size, scheme);
        }
      }
    }
  } finally {
    await resize(page, testSize);
    await setColorScheme(page, 'light');
  }
  assert.deepEqual(problems, [], `${name}:\n${problems.join('\n')}`);
}

const focused = focusedElement;

// The page's globals as the choice check below uses them (the tests are built without the DOM library).
interface ChoiceElement {
  selectedIndex: number;
  selectedOptions: ArrayLike<{ textContent: string | null }>;
  parentElement: { append(element: ChoiceElement): void } | null;
  style: Record<string, string>;
  getAttribute(name: string): string | null;
  closest(selector: string): { textContent: string | null } | null;
  getBoundingClientRect(): { width: number };
  cloneNode(deep: boolean): ChoiceElement;
  remove(): void;
}
declare const document: { querySelectorAll(selector: string): ArrayLike<ChoiceElement> };

/**
 * Drop-down choices too narrow to show the option chosen ("Softmax cross-…"): each is compared with a hidden
 * copy sized to that option (field-sizing: content), beside it so that it takes the same styles.
 */
async function clippedChoices(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const clipped: string[] = [];
    for (const choice of Array.from(document.querySelectorAll('select'))) {
      const shown = choice.getBoundingClientRect().width;
      if (shown === 0 || !choice.parentElement) continue;
      const probe = choice.cloneNode(true);
      Object.assign(probe.style, { position: 'absolute', visibility: 'hidden', fieldSizing: 'content', width: 'auto', minWidth: '0', maxWidth: 'none' });
      choice.parentElement.append(probe);
      probe.selectedIndex = choice.selectedIndex;
      const needed = probe.getBoundingClientRect().width;
      probe.remove();
      const name = choice.getAttribute('aria-label') ?? (choice.closest('label')?.textContent ?? '').trim().split('\n')[0];
      if (shown + 0.5 < needed) clipped.push(`${name}: "${choice.selectedOptions[0]?.textContent ?? ''}" needs ${Math.round(needed)} px, has ${Math.round(shown)}`);
    }
    return clipped;
  });
}

/** The Model screen's choices read whole at every laptop size and at the tests' own. */
async function assertChoicesReadable(page: Page): Promise<void> {
  try {
    for (const size of [...laptopSizes, testSize]) {
      await resize(page, size);
      assert.deepEqual(await clippedChoices(page), [], `${size.width}×${size.height}: every choice shows its option whole`);
    }
  } finally {
    await resize(page, testSize);
  }
}

describe('layout and accessibility: every screen at 1024 × 768 and 1280 × 720, axe in both themes', { skip: skipWithoutBrowser() }, () => {
  let flowers = '';
  let many = '';
  let linear = '';
  const scratch = useStudioWithScratch('layout', (dir) => {
    flowers = writeFile(dir, plan.flowers, flowerCsv(plan.flowerRows, 5));
    many = writeFile(dir, plan.many, manyClassCsv(plan.manyClasses, plan.rowsPerClass, 7));
    linear = writeFile(dir, 'linear.csv', regressionCsv(regressionRows(200, 11)));
  });
  const step = sequentialSteps(() => scratch.studio);
  const page = () => scratch.studio!.page;

  step('Data, nothing open yet: a skip link, landmarks, the current step marked', 60_000, async () => {
    await audit(page(), 'data-empty');
    assert.equal(await navButton(page(), 'Data').getAttribute('aria-current'), 'step');
    assert.equal(await page().getByRole('main').count(), 1);
    // The first Tab reaches the skip link; following it puts focus in the main region.
    await page().keyboard.press('Tab');
    const skip = page().getByRole('link', { name: 'Skip to the screen' });
    assert.equal(await focused(page()), 'a Skip to the screen');
    await page().keyboard.press('Enter');
    assert.match(await focused(page()), /^h1 Data$/);
  });

  step('Data with a CSV open: focus moves to the opened dataset', 60_000, async () => {
    await openCsv(page(), flowers, 'species');
    await eventually(async () => assert.match(await focused(page()), new RegExp(`^h2 ${plan.flowers}`)));
    await audit(page(), 'data-csv');
  });

  step('Data with MNIST open', 60_000, async () => {
    await openMnist(page(), plan.mnistLimit);
    await eventually(async () => assert.match(await focused(page()), /^h2 MNIST \(train\)/));
    await audit(page(), 'data-mnist');
  });

  step('Next → Model: focus on the screen heading', 60_000, async () => {
    await page().getByRole('button', { name: 'Next: design the model →' }).click();
    await eventually(async () => assert.equal(await focused(page()), 'h1 Model'));
    assert.equal(await navButton(page(), 'Model').getAttribute('aria-current'), 'step');
  });

  // The widest layer table: two residual blocks, the second's summary naming its projection shortcut, and
  // batch normalisation and global average pooling among the kinds, at 1024 px wide with the rail beside it.
  step('Model with Fast ResNet: the residual blocks fit without sideways scrolling, every choice reads whole', 60_000, async () => {
    await choosePreset(page(), 'Fast ResNet (28x28)');
    await waitModelFits(page());
    for (const [position, shortcut] of [[5, /identity shortcut$/], [7, /1x1 projection shortcut, stride 2 \([\d,]+ parameters\)$/]] as const) {
      const row = layerRow(page(), position);
      assert.equal(await row.getByRole('combobox', { name: `Layer ${position} kind`, exact: true }).inputValue(), 'residual');
      assert.match(((await row.getByRole('button', { name: `Layer ${position} block's layers` }).textContent()) ?? '').trim(), shortcut);
      assert.equal(await row.getByRole('combobox', { name: `Layer ${position}.2 kind`, exact: true }).inputValue(), 'batchnorm');
    }
    // audit() measures 1024 × 768 and 1280 × 720; the tests' own size is checked here as well
    assert.deepEqual(overflowProblems(await measureOverflow(page())), [], `${testSize.width}×${testSize.height}`);
    await assertChoicesReadable(page());
    await audit(page(), 'model-resnet', { shotTarget: (p) => section(p, 'Layers') });
  });

  step('Model with LeNet-5', 60_000, async () => {
    await choosePreset(page(), 'LeNet-5');
    await waitModelFits(page());
    await setTrainingSettings(page(), { epochs: plan.epochs, batchSize: plan.batchSize, device: 'cpu' });
    await assertChoicesReadable(page());
    await audit(page(), 'model', { shotTarget: (p) => section(p, 'Layers') });
  });

  step('Train while it runs and after: focus on the progress, charts with a table', 180_000, async () => {
    await page().getByRole('button', { name: 'Next: train →' }).click();
    await eventually(async () => assert.equal(await focused(page()), 'h1 Train'));
    await startTraining(page());
    await eventually(async () => assert.equal(await focused(page()), 'button Pause'), 10_000);
    await waitTraining(page(), 60_000);
    // Paused, the run stays live while the screen is checked; Pause and Resume hand focus to each other.
    await page().keyboard.press('Enter');
    await waitState(page(), 'Paused');
    await eventually(async () => assert.equal(await focused(page()), 'button Resume'));
    await audit(page(), 'train-paused');
    await page().keyboard.press('Enter');
    await eventually(async () => assert.equal(await focused(page()), 'button Pause'));
    await waitCompleted(page(), 150_000);
    await eventually(async () => assert.match(await focused(page()), /See the evaluation/));
    // Each line chart has its numbers as a table too.
    const loss = page().getByRole('figure', { name: 'Loss' });
    await loss.getByText('Show as a table').click();
    const table = loss.getByRole('table', { name: 'Loss by epoch' });
    await table.waitFor();
    assert.equal(await table.locator('tbody tr').count(), plan.epochs, 'a row per epoch');
    await audit(page(), 'train-done');
  });

  step('Evaluate: a 10 × 10 matrix whole; a cell’s examples scroll into view and take focus', 60_000, async () => {
    await page().getByRole('button', { name: 'See the evaluation →' }).click();
    await eventually(async () => assert.equal(await focused(page()), 'h1 Evaluate'));
    const confusion = await readConfusion(page());
    assert.equal(confusion.labels.length, 10);
    await audit(page(), 'evaluate', { shotTarget: (p) => section(p, 'Confusion matrix') });
    const mistake = commonestMistake(confusion);
    const small = laptopSizes[0];
    await resize(page(), small);
    await openCell(page(), mistake.actual, mistake.predicted);
    const heading = page().getByRole('heading', { level: 2, name: `True ${mistake.actual}, predicted ${mistake.predicted}`, exact: true });
    await eventually(async () => assert.match(await focused(page()), new RegExp(`^h2 True ${mistake.actual}, predicted ${mistake.predicted}`)));
    const box = await heading.boundingBox();
    assert.ok(box && box.y >= 0 && box.y + box.height <= small.height, `the examples' heading is in view: ${JSON.stringify(box)}`);
    await audit(page(), 'evaluate-examples', { shotTarget: (p) => p.getByRole('region', { name: /^True / }) });
    await page().getByRole('button', { name: 'Close examples' }).click();
  });

  step('Models', 60_000, async () => {
    await goTo(page(), 'Models');
    await audit(page(), 'models');
  });

  step('100 classes: the matrix scrolls inside its region, the page does not', 180_000, async () => {
    await openCsv(page(), many, 'kind');
    await choosePreset(page(), 'Small MLP');
    await waitModelFits(page());
    await setTrainingSettings(page(), { epochs: 1, batchSize: 16, device: 'cpu' });
    await startTraining(page());
    await waitCompleted(page(), 120_000);
    await page().getByRole('button', { name: 'See the evaluation →' }).click();
    const confusion = await readConfusion(page());
    assert.equal(confusion.labels.length, plan.manyClasses);
    for (const size of laptopSizes) {
      await resize(page(), size);
      const report = await measureOverflow(page());
      assert.deepEqual(overflowProblems(report, ['confusion matrix']), [], `${size.width}: only the matrix scrolls`);
      const matrix = report.scrollers.find((scroller) => scroller.region === 'confusion matrix');
      assert.ok(matrix && matrix.excess > 0, `the matrix region scrolls sideways inside itself at ${size.width}`);
    }
    await audit(page(), 'evaluate-100', { allowedRegions: ['confusion matrix'], shotTarget: (p) => section(p, 'Confusion matrix') });
  });

  step('a regression: Data, Train and Evaluate (scatter plot, residuals, worst rows)', 120_000, async () => {
    await openRegressionCsv(page(), linear, 'y');
    // As in the regression flow: z-scored inputs keep a short run from diverging.
    await setSplits(page(), { normalisation: 'Z-score' });
    await audit(page(), 'data-regression');
    await choosePreset(page(), 'Small MLP');
    await waitModelFits(page());
    await setTrainingSettings(page(), { epochs: 3, batchSize: 16, learningRate: 0.001, device: 'cpu' });
    await startTraining(page());
    await waitCompleted(page(), 90_000);
    await audit(page(), 'train-regression');
    await page().getByRole('button', { name: 'See the evaluation →' }).click();
    await page().getByText(/R²/).first().waitFor();
    await audit(page(), 'evaluate-regression');
  });

  step('Models with three models: the table, saved runs and the comparison of two runs', 60_000, async () => {
    await goTo(page(), 'Models');
    await eventually(async () => assert.equal(await page().getByRole('table', { name: 'Models of this session' }).locator('tbody > tr').count(), 3));
    await audit(page(), 'models-three');
  });

  step('Search: the settings, the leaderboard, the plot and the trial runs of a small search (last: its winner joins the models)', 120_000, async () => {
    await goTo(page(), 'Search');
    await audit(page(), 'search-empty');
    const settings = section(page(), 'Settings');
    await settings.getByLabel('Trials').fill('3');
    await settings.getByLabel('First epochs').fill('1');
    await settings.getByLabel('Last epochs').fill('1');
    await page().getByRole('button', { name: 'Start search' }).click();
    await page().getByRole('status').filter({ hasText: /^Done$/ }).waitFor({ timeout: 100_000 });
    await audit(page(), 'search', { shotTarget: (p) => section(p, 'Leaderboard') });
  });
});
