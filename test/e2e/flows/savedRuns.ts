// The Models screen's "Saved runs" card: the run history on disk, opened and deleted by accessible name.
import type { Locator, Page } from 'playwright-core';
import { readTable, section, type TableText } from '../support/ui';

export function savedRunsTable(page: Page): Locator {
  return page.getByRole('table', { name: 'Runs saved on this computer' });
}

export async function readSavedRuns(page: Page): Promise<TableText> {
  return readTable(savedRunsTable(page));
}

/** Clicks "Open <run name>": its model joins the session's models. */
export async function openSavedRun(page: Page, runName: string): Promise<void> {
  await savedRunsTable(page).getByRole('button', { name: `Open ${runName}`, exact: true }).click();
}

/** "Delete <run name>", then the confirmation's "Yes, delete <run name>" (or "Keep <run name>"). */
export async function deleteSavedRun(page: Page, runName: string, confirm = true): Promise<void> {
  const table = savedRunsTable(page);
  await table.getByRole('button', { name: `Delete ${runName}`, exact: true }).click();
  const group = table.getByRole('group', { name: `Confirm deleting ${runName}` });
  await group.getByRole('button', { name: confirm ? `Yes, delete ${runName}` : `Keep ${runName}`, exact: true }).click();
}

export function savedRunsCard(page: Page): Locator {
  return section(page, 'Saved runs');
}
