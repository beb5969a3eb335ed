// Small, general ways of reading and driving the UI by role and accessible name, as a user would.
import type { Locator, Page } from 'playwright-core';

export type ScreenTitle = 'Data' | 'Model' | 'Train' | 'Search' | 'Evaluate' | 'Models';

/** The step buttons read "<n> <title> <hint>", e.g. "3 Train Fit the weights"; the hint changes. */
export function navButton(page: Page, title: ScreenTitle): Locator {
  return page.getByRole('navigation', { name: 'Steps' }).getByRole('button', { name: new RegExp(`^\\d+ ${title}\\b`) });
}

/** Clicks the step and waits for the screen's heading. */
export async function goTo(page: Page, title: ScreenTitle): Promise<void> {
  await navButton(page, title).click();
  await screenHeading(page, title).waitFor();
}

export function screenHeading(page: Page, title: ScreenTitle): Locator {
  return page.getByRole('heading', { level: 1, name: title, exact: true });
}

/** A card of the current screen, by its h2 heading. */
export function section(page: Page, heading: string | RegExp): Locator {
  return page.locator('section').filter({ has: page.getByRole('heading', { level: 2, name: heading }) });
}

export interface TableText {
  columns: string[];
  /** Body rows: the row header (if any) and cells, as shown. */
  rows: string[][];
  footer: string[][];
}

/** A table's visible text: header row, body rows and footer rows, cell by cell. */
export async function readTable(table: Locator): Promise<TableText> {
  const rows = async (part: string) =>
    Promise.all((await table.locator(`:scope > ${part} > tr`).all()).map(async (row) => (await row.locator(':scope > th, :scope > td').allTextContents()).map((text) => text.trim())));
  const [columns, body, footer] = await Promise.all([rows('thead'), rows('tbody'), rows('tfoot')]);
  return { columns: columns[0] ?? [], rows: body, footer };
}

/** Polls `check` until it passes (returns its value) or `timeoutMs` runs out (throws its last error). */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 10_000, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Runs `action` and returns how long it took, in milliseconds. */
export async function timed(action: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await action();
  return performance.now() - start;
}
