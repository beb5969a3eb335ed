// The "Draw a digit" card: strokes drawn with the mouse on the canvas, the class probabilities read back.
import type { Page } from 'playwright-core';

export const digitCanvasName = 'Drawing area for a digit: draw with the mouse, a finger or a pen';

/** Draws strokes given in the canvas's own 0–1 coordinates, each a list of points. */
export async function drawStrokes(page: Page, strokes: [number, number][][]): Promise<void> {
  const canvas = page.getByLabel(digitCanvasName);
  await canvas.scrollIntoViewIfNeeded();
  const box = await canvas.boundingBox();
  if (!box) throw new Error('the digit canvas is not shown');
  const at = ([x, y]: [number, number]) => [box.x + x * box.width, box.y + y * box.height] as const;
  for (const stroke of strokes) {
    await page.mouse.move(...at(stroke[0]));
    await page.mouse.down();
    for (const point of stroke.slice(1)) await page.mouse.move(...at(point), { steps: 8 });
    await page.mouse.up();
  }
}

/** A "1": one vertical stroke down the middle, slightly slanted. */
export const strokesOfOne: [number, number][][] = [[[0.52, 0.15], [0.5, 0.5], [0.47, 0.85]]];

/** The verdict line ("Prediction: 1 (98.2%)") and each class's probability (0–1) from the bar list. */
export async function readDigitPrediction(page: Page): Promise<{ verdict: string; probabilities: Record<string, number> }> {
  const verdict = ((await page.getByText(/^Prediction: /).textContent()) ?? '').trim();
  const items = await page.getByRole('list', { name: 'Class probabilities' }).getByRole('listitem').allTextContents();
  const probabilities: Record<string, number> = {};
  for (const item of items) {
    const match = /^\s*(\S+)\s+([\d.]+)\s*%/.exec(item);
    if (match) probabilities[match[1]] = Number(match[2]) / 100;
  }
  return { verdict, probabilities };
}
