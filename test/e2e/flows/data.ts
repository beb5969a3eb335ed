// The Data screen: open a CSV through the file picker, or the built-in MNIST.
import * as path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { goTo } from '../support/ui';

/** The tab of an open dataset ("flowers.csv 1,500 examples"). */
export function datasetTab(page: Page, name: string): Locator {
  return page.getByRole('group', { name: 'Open datasets' }).getByRole('button', { name: new RegExp(`^${escape(name)} [\\d,]+ examples$`) });
}

/** Picks `file` with "Choose a file…" (the browser's file chooser), chooses the label column and opens it. */
export async function openCsv(page: Page, file: string, labelColumn: string): Promise<void> {
  await goTo(page, 'Data');
  const chooser = page.waitForEvent('filechooser');
  await page.getByRole('button', { name: 'Choose a file…' }).click();
  await (await chooser).setFiles(file);
  const name = path.basename(file);
  await page.getByRole('combobox', { name: 'Label column' }).selectOption(labelColumn);
  await page.getByRole('button', { name: `Open ${name}` }).click();
  await datasetTab(page, name).and(page.locator('[aria-pressed="true"]')).waitFor();
}

/** Opens the built-in MNIST training images, the first `limit` of them. */
export async function openMnist(page: Page, limit: number): Promise<void> {
  await goTo(page, 'Data');
  await page.getByRole('combobox', { name: 'Split' }).selectOption({ label: 'Training (60,000)' });
  await page.getByRole('spinbutton', { name: /^Limit/ }).fill(String(limit));
  await page.getByRole('button', { name: 'Open MNIST' }).click();
  await datasetTab(page, 'MNIST (train)').and(page.locator('[aria-pressed="true"]')).waitFor({ timeout: 30_000 });
}

/** The open dataset's summary as shown: "Examples" → "1,500", "Features" → "4", … */
export async function readDatasetSummary(page: Page): Promise<Record<string, string>> {
  const [terms, values] = await Promise.all([page.getByRole('main').getByRole('term').allTextContents(), page.getByRole('main').getByRole('definition').allTextContents()]);
  return Object.fromEntries(terms.map((term, index) => [term.trim(), (values[index] ?? '').trim()]));
}

export function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
