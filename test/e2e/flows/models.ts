// Saving a model (a browser download) and importing a model file (the browser's file chooser).
import * as path from 'node:path';
import type { Page } from 'playwright-core';

/** Clicks "Save <model>" (on the current screen) and keeps the download in `dir`; returns its path. */
export function saveModel(page: Page, modelName: string, dir: string): Promise<string> {
  return downloadFrom(page, `Save ${modelName}`, dir);
}

/** Clicks "Export ONNX of <model>" (the Models screen) and keeps the download in `dir`; returns its path. */
export function exportOnnx(page: Page, modelName: string, dir: string): Promise<string> {
  return downloadFrom(page, `Export ONNX of ${modelName}`, dir);
}

async function downloadFrom(page: Page, buttonName: string, dir: string): Promise<string> {
  const download = page.waitForEvent('download');
  await page.getByRole('button', { name: buttonName, exact: true }).first().click();
  const file = await download;
  const target = path.join(dir, file.suggestedFilename());
  await file.saveAs(target);
  return target;
}

/** Imports a model file on the Models screen through "Import a model file…". */
export async function importModel(page: Page, file: string): Promise<void> {
  const chooser = page.waitForEvent('filechooser');
  await page.getByRole('button', { name: 'Import a model file…' }).click();
  await (await chooser).setFiles(file);
}

/** The Models screen's table of the session's models (name first). */
export function modelsTable(page: Page) {
  return page.getByRole('table', { name: 'Models of this session' });
}

/** Picks two runs in "Compare two runs"; returns the metrics table: metric → [first, second, Δ] as shown. */
export async function compareRuns(page: Page, first: string, second: string): Promise<Record<string, string[]>> {
  await page.getByRole('combobox', { name: 'First run' }).selectOption({ label: first });
  await page.getByRole('combobox', { name: 'Second run' }).selectOption({ label: second });
  const table = page.getByRole('table', { name: 'Metrics of the two runs' });
  await table.waitFor();
  const rows = await table.locator('tbody > tr').all();
  const metrics: Record<string, string[]> = {};
  for (const row of rows) {
    const cells = (await row.locator(':scope > th, :scope > td').allTextContents()).map((text) => text.trim());
    metrics[cells[0]] = cells.slice(1);
  }
  return metrics;
}
