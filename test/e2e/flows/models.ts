// Saving a model (a browser download) and importing a model file (the browser's file chooser).
import * as path from 'node:path';
import type { Page } from 'playwright-core';

/** Clicks "Save <model>" (on the current screen) and keeps the download in `dir`; returns its path. */
export async function saveModel(page: Page, modelName: string, dir: string): Promise<string> {
  const download = page.waitForEvent('download');
  await page.getByRole('button', { name: `Save ${modelName}`, exact: true }).first().click();
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
