// The Evaluate screen (and the evaluation picker it shares with Models): the accuracy, the per-class
// report and the confusion matrix, read as numbers.
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { readTable, section } from '../support/ui';

export interface ClassRow {
  label: string;
  precision: number;
  recall: number;
  f1: number;
  support: number;
}

const number = (text: string) => Number(text.replace(/,/g, ''));

/** The headline: "<model> on <data>" and its accuracy (0–1). */
export async function readHeadline(page: Page): Promise<{ title: string; accuracy: number; examples: number }> {
  const shown = /^[\d.]+% accuracy$/;
  const card = page.getByRole('main').locator('section').filter({ has: page.getByText(shown) });
  const accuracy = card.getByText(shown);
  await accuracy.waitFor();
  const title = ((await card.locator('p').first().textContent()) ?? '').trim();
  const percent = /^([\d.]+)%/.exec(((await accuracy.textContent()) ?? '').trim())?.[1];
  const examples = await card.getByRole('definition').first().textContent();
  return { title, accuracy: Number(percent) / 100, examples: number(examples ?? '') };
}

/** The "Per class" table's body rows (class, precision, recall, F1, support). */
export async function readClassReport(page: Page): Promise<{ rows: ClassRow[]; footer: string[][] }> {
  const table = await readTable(section(page, 'Per class').getByRole('table'));
  assert.deepEqual(table.columns, ['Class', 'Precision', 'Recall', 'F1', 'Support']);
  const rows = table.rows.map(([label, precision, recall, f1, support]) => ({
    label,
    precision: number(precision),
    recall: number(recall),
    f1: number(f1),
    support: number(support),
  }));
  return { rows, footer: table.footer };
}

/** The confusion matrix: its class labels (columns) and counts, rows being the true class. */
export async function readConfusion(page: Page): Promise<{ labels: string[]; rowLabels: string[]; counts: number[][] }> {
  const table = await readTable(page.getByRole('table', { name: /^Confusion matrix/ }));
  return {
    labels: table.columns.slice(1),
    rowLabels: table.rows.map((row) => row[0]),
    counts: table.rows.map((row) => row.slice(1).map(number)),
  };
}

/** Picks a model and a dataset in the evaluation picker on the current screen and runs it. */
export async function evaluateWith(page: Page, model: string, dataset: RegExp): Promise<void> {
  await page.getByRole('combobox', { name: 'Model', exact: true }).selectOption({ label: model });
  const data = page.getByRole('combobox', { name: 'Data', exact: true });
  const label = (await data.getByRole('option').allTextContents()).find((text) => dataset.test(text));
  assert.ok(label, `a dataset matching ${dataset} among ${await data.getByRole('option').allTextContents()}`);
  await data.selectOption({ label });
  await page.getByRole('button', { name: 'Evaluate', exact: true }).click();
}

/** The confusion matrix's off-diagonal cell with the most examples (the model's commonest mistake). */
export function commonestMistake(confusion: { labels: string[]; counts: number[][] }): { actual: string; predicted: string; count: number } {
  let best = { actual: '', predicted: '', count: -1 };
  confusion.counts.forEach((row, actual) =>
    row.forEach((count, predicted) => {
      if (actual !== predicted && count > best.count) best = { actual: confusion.labels[actual], predicted: confusion.labels[predicted], count };
    }),
  );
  return best;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Clicks a confusion-matrix cell and waits for its examples card ("True a, predicted p"). */
export async function openCell(page: Page, actual: string, predicted: string): Promise<void> {
  await page.getByRole('button', { name: new RegExp(`^Examples: true ${escapeRegExp(actual)}, predicted ${escapeRegExp(predicted)}: `) }).click();
  await page.getByRole('heading', { level: 2, name: `True ${actual}, predicted ${predicted}`, exact: true }).waitFor();
}

/** The confidences (0–1) of the shown examples of the open cell, in the order shown: table rows or image tiles. */
export async function readCellConfidences(page: Page): Promise<number[]> {
  const percent = (text: string) => Number(/([\d.]+)\s*%/.exec(text)?.[1]) / 100;
  const card = page.getByRole('region', { name: /^True .+, predicted / });
  const table = card.getByRole('table', { name: 'Examples of the chosen cell' });
  if ((await table.count()) > 0) return (await readTable(table)).rows.map((row) => percent(row[row.length - 1]));
  return (await card.getByRole('list', { name: /^Examples, / }).locator('.confidence').allTextContents()).map(percent);
}

/** Shows the open cell's examples least (or most) confident first. */
export async function orderCell(page: Page, order: 'Most confident first' | 'Least confident first'): Promise<void> {
  const button = page.getByRole('group', { name: 'Order of the examples' }).getByRole('button', { name: order });
  await button.click();
  await button.and(page.locator('[aria-pressed="true"]')).waitFor();
}
