// The screens of a regression model: the Train screen's R², the Evaluate screen's headline, scatter plot,
// residual histogram and worst predictions with a row's feature values, read as numbers.
import assert from 'node:assert/strict';
import type { Locator, Page } from 'playwright-core';
import { eventually, readTable, section } from '../support/ui';
import { openCsv, readDatasetSummary } from './data';

/** "1,234.5" → 1234.5; "+5.6" → 5.6; "–" → NaN. */
export const numberOf = (text: string) => Number(text.replace(/,/g, '').replace(/^\+/, '').trim() || NaN);

/** The Evaluate headline of a regression model: its title, R² and the figures beside it (MAE, RMSE, MAPE, Examples). */
export async function readRegressionHeadline(page: Page): Promise<{ title: string; r2: number; figures: Record<string, string> }> {
  const shown = /^-?[\d.]+ R²/;
  const card = page.getByRole('main').locator('section').filter({ has: page.getByText(shown) });
  await card.getByText(shown).waitFor();
  const title = ((await card.locator('p').first().textContent()) ?? '').trim();
  const r2 = numberOf((((await card.getByText(shown).textContent()) ?? '').split('R²')[0]));
  const [terms, values] = await Promise.all([card.getByRole('term').allTextContents(), card.getByRole('definition').allTextContents()]);
  const figures = Object.fromEntries(terms.map((term, index) => [term.trim(), (values[index] ?? '').trim()]));
  return { title, r2, figures };
}

/** The predicted-vs-true figure of `target`. */
/** Opens a CSV with `target` as its label column and waits for the summary to say Regression; returns the summary. */
export async function openRegressionCsv(page: Page, file: string, target: string): Promise<Record<string, string>> {
  await openCsv(page, file, target);
  return eventually(async () => {
    const shown = await readDatasetSummary(page);
    assert.equal(shown['Task'], 'Regression', JSON.stringify(shown));
    return shown;
  });
}

export function scatterFigure(page: Page, target: string): Locator {
  return page.getByRole('figure').filter({ has: page.getByText(`Predicted against true ${target}`) });
}

export function residualFigure(page: Page, target: string): Locator {
  return page.getByRole('figure').filter({ has: page.getByText(`Errors of ${target}`) });
}

/** Whether a figure's canvas has anything drawn on it (a chart that failed to draw stays transparent). */
export async function canvasIsDrawn(figure: Locator): Promise<boolean> {
  type Canvas = { width: number; height: number; getContext(kind: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> } } | null };
  return figure.locator('canvas').evaluate((element) => {
    const canvas = element as unknown as Canvas;
    const pixels = canvas.getContext('2d')?.getImageData(0, 0, canvas.width, canvas.height).data ?? [];
    return Array.prototype.some.call(pixels, (value: number) => value !== 0);
  });
}

/** The residual histogram's bins, from its text alternative (a visually hidden table). */
export async function readResidualBins(page: Page, target: string): Promise<{ range: string; count: number }[]> {
  const table = await readTable(page.getByRole('table', { name: `Examples per error range of ${target}` }));
  return table.rows.map((row) => ({ range: row[0], count: numberOf(row[1]) }));
}

export interface WorstRow {
  /** "#12": the example's 1-based number. */
  example: string;
  truth: number;
  predicted: number;
  error: number;
}

export function worstTable(page: Page): Locator {
  return section(page, 'Worst predictions').getByRole('table');
}

export async function readWorstPredictions(page: Page): Promise<WorstRow[]> {
  const table = await readTable(worstTable(page));
  return table.rows.map((row) => ({ example: row[0], truth: numberOf(row[1]), predicted: numberOf(row[2]), error: numberOf(row[3]) }));
}

/** The open row's panel ("Example #12") and its feature values by name. */
export async function readRowFeatures(page: Page): Promise<{ title: string; features: Record<string, number>; focused: boolean }> {
  const panel = page.getByRole('region', { name: /^Example #/ });
  await panel.waitFor();
  const title = ((await panel.getByRole('heading').textContent()) ?? '').trim();
  const list = panel.getByLabel('Feature values');
  const [terms, values] = await Promise.all([list.getByRole('term').allTextContents(), list.getByRole('definition').allTextContents()]);
  const features = Object.fromEntries(terms.map((term, index) => [term.trim(), numberOf(values[index] ?? '')]));
  const focused = await panel.evaluate((element) => element === element.ownerDocument.activeElement);
  return { title, features, focused };
}
