// The Data screen: open a CSV through the file picker, or the built-in MNIST.
import * as path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { goTo } from '../support/ui';

/** The tab of an open dataset ("flowers.csv 1,500 examples"). */
export function datasetTab(page: Page, name: string): Locator {
  return page.getByRole('group', { name: 'Open datasets' }).getByRole('button', { name: new RegExp(`^${escape(name)} [\\d,]+ examples$`) });
}

/** The role choices of the column roles table, as the selects show them. */
export type RoleTitle = 'Feature (type inferred)' | 'Categorical (one-hot)' | 'Label (class or number)' | 'Ignore';

/** Picks `file` with "Choose a file…" (the browser's file chooser) and waits for its column roles table. */
export async function chooseCsv(page: Page, file: string): Promise<void> {
  await goTo(page, 'Data');
  const chooser = page.waitForEvent('filechooser');
  await page.getByRole('button', { name: 'Choose a file…' }).click();
  await (await chooser).setFiles(file);
  await page.getByRole('table', { name: `Column roles of ${path.basename(file)}` }).waitFor();
}

/** The role each column has now, by column name. */
export async function readColumnRoles(page: Page, file: string): Promise<Record<string, string>> {
  const table = page.getByRole('table', { name: `Column roles of ${path.basename(file)}` });
  const names = (await table.locator('tbody th[scope="row"]').allTextContents()).map((name) => name.trim());
  const roles: Record<string, string> = {};
  for (const name of names) {
    const select = page.getByRole('combobox', { name: `Role of column ${name}`, exact: true });
    roles[name] = ((await select.locator('option:checked').textContent()) ?? '').trim();
  }
  return roles;
}

/** Chooses the label column, sets other columns' roles, and opens the chosen CSV. */
export async function openChosenCsv(page: Page, file: string, labelColumn: string, roles: Record<string, RoleTitle> = {}): Promise<void> {
  const name = path.basename(file);
  await page.getByRole('combobox', { name: 'Label column' }).selectOption(labelColumn);
  for (const [column, role] of Object.entries(roles)) {
    await page.getByRole('combobox', { name: `Role of column ${column}`, exact: true }).selectOption({ label: role });
  }
  await page.getByRole('button', { name: `Open ${name}` }).click();
  await datasetTab(page, name).and(page.locator('[aria-pressed="true"]')).waitFor();
}

/** Picks `file`, chooses the label column (and other roles) and opens it. */
export async function openCsv(page: Page, file: string, labelColumn: string, roles: Record<string, RoleTitle> = {}): Promise<void> {
  await chooseCsv(page, file);
  await openChosenCsv(page, file, labelColumn, roles);
}

export type NormalisationTitle = 'None' | 'Min-max' | 'Z-score';

/** Sets the open dataset's validation and test shares and its normalisation (the Data screen's "Splits and normalisation"). */
export async function setSplits(page: Page, settings: { validation?: number; test?: number; normalisation?: NormalisationTitle }): Promise<void> {
  if (settings.validation !== undefined) await page.getByRole('spinbutton', { name: 'Validation share' }).first().fill(String(settings.validation));
  if (settings.test !== undefined) await page.getByRole('spinbutton', { name: 'Test share' }).fill(String(settings.test));
  if (settings.normalisation !== undefined) await page.getByRole('radio', { name: settings.normalisation, exact: true }).check();
}

/** The live counts under the shares: "Training" → 900, "Validation" → 225, "Test" → 375. */
export async function readSplitCounts(page: Page): Promise<Record<string, number>> {
  const list = page.getByLabel('Examples per split');
  const [terms, values] = await Promise.all([list.getByRole('term').allTextContents(), list.getByRole('definition').allTextContents()]);
  return Object.fromEntries(terms.map((term, index) => [term.trim(), Number((values[index] ?? '').replace(/,/g, ''))]));
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

/** Picks `file`, ticks "No label column (rows to predict)" and opens it: rows for Evaluate → Predict a file. */
export async function openUnlabeledCsv(page: Page, file: string): Promise<void> {
  const name = path.basename(file);
  await chooseCsv(page, file);
  await page.getByRole('checkbox', { name: 'No label column (rows to predict)' }).check();
  await page.getByRole('button', { name: `Open ${name}` }).click();
  await datasetTab(page, name).and(page.locator('[aria-pressed="true"]')).waitFor();
}
