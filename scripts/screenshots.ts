// `npm run screenshots`: drives the end-to-end flows through `nnstudio serve` in headless Chromium and
// writes docs/screenshots/<screen>-<theme>.png for every screen in the light and the dark theme, at
// 1440 × 900, and <screen>-<theme>-1024x768.png at a small laptop's size. The session: the CSV flow's file and MLP (a first model), then MNIST with a CNN for a few
// epochs, which the screens show. Needs the native engine (npm install builds it; or NNSTUDIO_NATIVE).
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { openStudio, type Studio } from '../test/e2e/support/studio';
import { repoRoot } from '../test/e2e/support/serve';
import { flowerCsv, flowerIgnoredColumn, flowerLabelColumn, scratchDir, writeFile } from '../test/e2e/support/data';
import { goTo, type ScreenTitle } from '../test/e2e/support/ui';
import { chooseCsv, openCsv, openMnist, setSplits } from '../test/e2e/flows/data';
import { choosePreset, removeLayer, setTrainingSettings, waitModelFits } from '../test/e2e/flows/model';
import { startTraining, waitCompleted } from '../test/e2e/flows/train';
import { commonestMistake, openCell, readConfusion, readHeadline } from '../test/e2e/flows/evaluate';
import { drawStrokes, strokesOfOne } from '../test/e2e/flows/digit';
import { compareRuns } from '../test/e2e/flows/models';
import { csvFlowPlan } from '../test/e2e/flows/plans';

const outDir = path.join(repoRoot, 'docs', 'screenshots');
const screens: ScreenTitle[] = ['Data', 'Model', 'Train', 'Evaluate', 'Models'];
const themes = ['light', 'dark'] as const;
/** The desktop size the e2e tests use (no suffix), then a small laptop's. */
const sizes = [
  { width: 1440, height: 900, suffix: '' },
  { width: 1024, height: 768, suffix: '-1024x768' },
] as const;
/** The whole script's limit: it never hangs a terminal or a CI job. */
const overallTimeoutMs = 8 * 60_000;

/** The sizes of the pictured session: enough MNIST for readable curves over a few epochs. */
const pictured = { csvEpochs: 8, mnistLimit: 6000, mnistPreset: 'LeNet-5', mnistEpochs: 6, mnistBatchSize: 64, otherPreset: 'Small MLP', otherEpochs: 4 };

async function driveFlows(page: Page, dir: string): Promise<void> {
  // The CSV flow's first steps: a tabular dataset and an MLP, trained: the Models screen's first model.
  await openCsv(page, writeFile(dir, csvFlowPlan.trainFile, flowerCsv(csvFlowPlan.trainRows, 1)), flowerLabelColumn, { [flowerIgnoredColumn]: 'Ignore' });
  await choosePreset(page, 'Small MLP');
  await waitModelFits(page, 'flatten,dense:128:relu,dense:3');
  await removeLayer(page, 1);
  await waitModelFits(page, 'dense:128:relu,dense:3');
  await setTrainingSettings(page, { optimizer: 'Adam', learningRate: 0.001, batchSize: 32, epochs: pictured.csvEpochs, device: 'cpu' });
  await startTraining(page);
  await waitCompleted(page, 120_000);

  // The MNIST flow, the one the screens show: an MLP first (the run compared on Models), then the CNN.
  await openMnist(page, pictured.mnistLimit);
  await setSplits(page, { validation: 0.1 });
  await choosePreset(page, pictured.otherPreset);
  await waitModelFits(page);
  await setTrainingSettings(page, { epochs: pictured.otherEpochs, batchSize: pictured.mnistBatchSize, device: 'cpu' });
  await startTraining(page);
  await waitCompleted(page, 5 * 60_000);
  await choosePreset(page, pictured.mnistPreset);
  await waitModelFits(page);
  await setTrainingSettings(page, { epochs: pictured.mnistEpochs, batchSize: pictured.mnistBatchSize, device: 'cpu' });
  await startTraining(page);
  await waitCompleted(page, 5 * 60_000);
  await goTo(page, 'Evaluate');
  await readHeadline(page);
}

/** The names of the two MNIST runs (MLP first, CNN second), as the model pickers list them. */
async function mnistRuns(page: Page): Promise<string[]> {
  const model = page.getByRole('combobox', { name: 'Model', exact: true });
  return (await model.getByRole('option').allTextContents()).map((text) => text.trim()).filter((text) => text.startsWith('MNIST'));
}

/** Each shot's state: a confusion cell's examples and a drawn digit; two runs compared; a CSV's column roles. */
async function stage(page: Page, name: string, csvFile: string): Promise<void> {
  if (name === 'evaluate-examples') {
    await openCell(page, ...cellOf(commonestMistake(await readConfusion(page))));
    await drawStrokes(page, strokesOfOne);
    await page.getByText(/^Prediction: /).waitFor();
    await scrollToHeading(page, /^True .+, predicted /);
  }
  if (name === 'models') {
    const runs = await mnistRuns(page);
    if (runs.length >= 2) await compareRuns(page, runs[0], runs[1]);
    await scrollToHeading(page, 'Compare two runs');
  }
  if (name === 'data-columns') {
    await chooseCsv(page, csvFile);
    await scrollToHeading(page, /^Columns of /);
  }
}

/** Brings a card's heading to the top of the screen (the screens scroll inside their own area). */
async function scrollToHeading(page: Page, name: string | RegExp): Promise<void> {
  await page.getByRole('heading', { level: 2, name }).evaluate((heading) => heading.scrollIntoView({ block: 'start' }));
}

const cellOf = (cell: { actual: string; predicted: string }): [string, string] => [cell.actual, cell.predicted];

/** The evaluation pickers name the pictured model and data (the MNIST run), not the first ones opened. */
async function pickShownModel(page: Page): Promise<void> {
  const model = page.getByRole('combobox', { name: 'Model', exact: true });
  // The last MNIST model: the CNN.
  const mnistModel = (await model.getByRole('option').allTextContents()).filter((text) => text.startsWith('MNIST')).pop();
  if (mnistModel) await model.selectOption({ label: mnistModel });
  const data = page.getByRole('combobox', { name: 'Data', exact: true });
  const mnistData = (await data.getByRole('option').allTextContents()).find((text) => text.startsWith('MNIST'));
  if (mnistData) await data.selectOption({ label: mnistData });
}

async function shoot(studio: Studio, csvFile: string): Promise<string[]> {
  const { page } = studio;
  const written: string[] = [];
  fs.mkdirSync(outDir, { recursive: true });
  // The five screens, then the Data screen with a CSV's column roles ("data-columns").
  const shots: { screen: ScreenTitle; name: string }[] = [
    ...screens.map((screen) => ({ screen, name: screen.toLowerCase() })),
    { screen: 'Evaluate', name: 'evaluate-examples' },
    { screen: 'Data', name: 'data-columns' },
  ];
  for (const { screen, name } of shots) {
    await goTo(page, screen);
    if (screen === 'Evaluate' || screen === 'Models') await pickShownModel(page);
    await stage(page, name, csvFile);
    for (const size of sizes) {
      await page.setViewportSize({ width: size.width, height: size.height });
      for (const theme of themes) {
        await page.emulateMedia({ colorScheme: theme });
        // No hover or focus ring in the picture; let the charts redraw in the theme's colours and size.
        await page.mouse.move(0, 0);
        await page.evaluate('document.activeElement instanceof HTMLElement && document.activeElement.blur()');
        await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))');
        const file = path.join(outDir, `${name}-${theme}${size.suffix}.png`);
        await page.screenshot({ path: file, animations: 'disabled' });
        written.push(path.relative(repoRoot, file));
      }
    }
    await page.setViewportSize({ width: sizes[0].width, height: sizes[0].height });
  }
  return written;
}

async function main(): Promise<void> {
  const dir = scratchDir('screenshots');
  let studio: Studio | undefined;
  const timer = setTimeout(() => {
    process.stderr.write(`screenshots: still running after ${overallTimeoutMs / 60_000} minutes; stopping\n`);
    void studio?.close().finally(() => process.exit(1));
  }, overallTimeoutMs);
  try {
    studio = await openStudio();
    await driveFlows(studio.page, dir);
    for (const file of await shoot(studio, path.join(dir, csvFlowPlan.trainFile))) process.stdout.write(`wrote ${file}\n`);
    if (studio.pageErrors.length) process.stderr.write(`page errors:\n${studio.pageErrors.join('\n')}\n`);
  } catch (error) {
    const where = await studio?.artifacts('screenshots').catch(() => undefined);
    process.stderr.write(`screenshots: ${(error as Error).message}\n${where ? `the page and the server's log: ${where}.png, ${where}.log\n` : ''}`);
    process.exitCode = 1;
  } finally {
    clearTimeout(timer);
    await studio?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

void main();
