// The Train screen: start a run, read its progress while it runs, wait for the outcome.
import assert from 'node:assert/strict';
import type { Locator, Page } from 'playwright-core';
import { eventually, goTo } from '../support/ui';

export function progressBar(page: Page): Locator {
  return page.getByRole('progressbar', { name: 'Training progress' });
}

export interface Progress {
  /** "Training", "Paused", "Finished: completed", … */
  state: string;
  /** 0–100, the progress bar's value. */
  percent: number;
  epoch?: number;
  epochs?: number;
  step?: number;
  stepsPerEpoch?: number;
}

/** The progress card as shown: its state line, the bar's value and "epoch e / E · step s / S". */
export async function readProgress(page: Page): Promise<Progress> {
  const bar = progressBar(page);
  const card = page.locator('section').filter({ has: bar });
  const [state, percent, counter] = await Promise.all([
    card.locator('strong').first().textContent(),
    bar.getAttribute('aria-valuenow'),
    // No waiting here: before the first step there is no counter.
    card.getByText(/^epoch \d+/).allTextContents(),
  ]);
  const numbers = /epoch (\d+) \/ (\d+) · step ([\d,]+) \/ ([\d,]+)/.exec(counter.join(' '));
  const int = (text: string | undefined) => (text === undefined ? undefined : Number(text.replace(/,/g, '')));
  return {
    state: (state ?? '').trim(),
    percent: Number(percent),
    epoch: int(numbers?.[1]),
    epochs: int(numbers?.[2]),
    step: int(numbers?.[3]),
    stepsPerEpoch: int(numbers?.[4]),
  };
}

/** How far the run is, in steps from its start (comparable across epochs). */
export function stepsDone(progress: Progress): number {
  return ((progress.epoch ?? 1) - 1) * (progress.stepsPerEpoch ?? 0) + (progress.step ?? 0);
}

/** The finished run's outcome line ("Training completed", …). */
function outcomeLine(page: Page): Locator {
  return page.getByText(/^Training (completed|cancelled|diverged|failed)$/);
}

/**
 * Starts a run. When an earlier run's outcome is on screen, waits until that element has left the page (the
 * new run replaced it), so that waiting for this run's outcome cannot find the old one, however fast
 * the new run is.
 */
export async function startTraining(page: Page): Promise<void> {
  await goTo(page, 'Train');
  const previous = (await outcomeLine(page).count()) > 0 ? await outcomeLine(page).elementHandle() : null;
  await page.getByRole('button', { name: /^(Start training|Train again)$/ }).click();
  if (previous) {
    await eventually(async () => assert.equal(await previous.evaluate((element) => (element as unknown as { isConnected: boolean }).isConnected), false, 'the earlier outcome is replaced'));
    await previous.dispose();
  }
}

/** Waits until the engine reports steps (state "Training" with a step counter). */
export async function waitTraining(page: Page, timeoutMs = 30_000): Promise<Progress> {
  return eventually(async () => {
    const progress = await readProgress(page);
    assert.equal(progress.state, 'Training');
    assert.ok(progress.step !== undefined, 'a step counter');
    return progress;
  }, timeoutMs);
}

/** Waits for "Training completed" (fails at once on another outcome) and returns the outcome's text. */
export async function waitCompleted(page: Page, timeoutMs: number): Promise<string> {
  const outcome = outcomeLine(page);
  await outcome.waitFor({ timeout: timeoutMs });
  const card = page.locator('section').filter({ has: outcome });
  const text = ((await card.textContent()) ?? '').replace(/\s+/g, ' ');
  assert.equal(((await outcome.textContent()) ?? '').trim(), 'Training completed', text);
  return text;
}

/** A canvas's pixels as a data URL: two different reads mean the chart was redrawn with new data. */
export async function chartPixels(page: Page, name: 'Loss' | 'Accuracy'): Promise<string> {
  return page.getByRole('figure').filter({ hasText: name }).locator('canvas').evaluate((canvas) => (canvas as unknown as { toDataURL(): string }).toDataURL());
}

/** The progress card's figures ("Learning rate" → "0.0005", "Samples/s" → "12,345", …). */
export async function readRunFigures(page: Page): Promise<Record<string, string>> {
  const card = page.locator('section').filter({ has: progressBar(page) });
  const [terms, values] = await Promise.all([card.getByRole('term').allTextContents(), card.getByRole('definition').allTextContents()]);
  return Object.fromEntries(terms.map((term, index) => [term.trim(), (values[index] ?? '').trim()]));
}

/** Waits for the state line to read `state` ("Paused", "Training", "Finished: cancelled", …). */
export async function waitState(page: Page, state: string, timeoutMs = 15_000): Promise<Progress> {
  return eventually(async () => {
    const progress = await readProgress(page);
    assert.equal(progress.state, state);
    return progress;
  }, timeoutMs);
}
