// Evaluate → Predict a file: a model and an open file picked, the predictions' first rows read, the CSV saved.
import * as fs from 'node:fs';
import * as path from 'node:path';
import Papa from 'papaparse';
import type { Page } from 'playwright-core';
import { goTo, readTable, section, type TableText } from '../support/ui';

/** Predicts `fileLabel` (the file picker's option, matched from its start) with `model`; returns the preview table. */
export async function predictFile(page: Page, model: string, fileLabel: RegExp): Promise<TableText> {
  await goTo(page, 'Evaluate');
  const card = section(page, 'Predict a file');
  await card.getByRole('combobox', { name: 'Predict with' }).selectOption({ label: model });
  const select = card.getByRole('combobox', { name: 'File to predict' });
  const labels = (await select.getByRole('option').allTextContents()).map((text) => text.trim());
  const label = labels.find((text) => fileLabel.test(text));
  if (!label) throw new Error(`no file ${fileLabel} among ${JSON.stringify(labels)}`);
  await select.selectOption({ label });
  await card.getByRole('button', { name: 'Predict', exact: true }).click();
  const table = card.getByRole('table', { name: 'Predictions' });
  await table.waitFor({ timeout: 30_000 });
  return readTable(table);
}

/** Clicks "Save the predictions (CSV)" and reads the downloaded CSV: header and rows as text. */
export async function savePredictedCsv(page: Page, dir: string): Promise<{ file: string; columns: string[]; rows: string[][] }> {
  const card = section(page, 'Predict a file');
  const download = page.waitForEvent('download');
  await card.getByRole('button', { name: 'Save the predictions (CSV)' }).click();
  const saved = await download;
  const file = path.join(dir, saved.suggestedFilename());
  await saved.saveAs(file);
  const parsed = Papa.parse<string[]>(fs.readFileSync(file, 'utf8').trim(), { skipEmptyLines: true });
  const [columns, ...rows] = parsed.data;
  return { file, columns, rows };
}
