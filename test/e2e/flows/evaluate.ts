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
