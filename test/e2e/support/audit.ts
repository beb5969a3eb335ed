// Checks a screen as it is now: horizontal overflow measured in the DOM at a window size, and axe-core's
// accessibility rules (serious and critical violations) in the light and the dark theme.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Page } from 'playwright-core';

// The page's globals as far as the functions run in it use them (the tests are built without the DOM library).
interface PageElement {
  tagName: string;
  id: string;
  className: unknown;
  textContent: string | null;
  parentElement: PageElement | null;
  scrollWidth: number;
  clientWidth: number;
  getAttribute(name: string): string | null;
  getBoundingClientRect(): { right: number; width: number };
  querySelectorAll(selector: string): ArrayLike<PageElement>;
}
declare const document: { documentElement: PageElement; body: PageElement; activeElement: PageElement | null };
declare function getComputedStyle(element: PageElement): { overflowX: string; display: string; visibility: string };
declare function requestAnimationFrame(callback: () => void): number;
interface AxeResults {
  violations: { id: string; impact?: string | null; help: string; nodes: { target: unknown[] }[] }[];
}
declare const window: { axe?: { run(context: unknown, options: object): Promise<AxeResults> } };

export interface WindowSize {
  width: number;
  height: number;
}

export const laptopSizes: WindowSize[] = [
  { width: 1024, height: 768 },
  { width: 1280, height: 720 },
];

/** The tests' own window size (support/browser.ts), restored after each check. */
export const testSize: WindowSize = { width: 1440, height: 900 };

export type ColorScheme = 'light' | 'dark';

/** What makes the page wider than the window, or scroll sideways, as a list of readable lines (none: it fits). */
export interface OverflowReport {
  /** document.documentElement.scrollWidth − clientWidth (0 when the page does not scroll sideways). */
  pageExcess: number;
  /** Elements whose box reaches past the window's right edge without a scrolling ancestor to hold them. */
  outside: string[];
  /** Elements that scroll sideways themselves (scrollWidth > clientWidth), with their data-scroll-region name if any. */
  scrollers: { name: string; region: string | null; excess: number }[];
}

/**
 * Measures the page in the browser. An element counts as "outside" when its right edge passes the window and
 * no ancestor clips or scrolls it; an element that scrolls sideways is listed in `scrollers` (the caller
 * decides which are intended: those marked data-scroll-region).
 */
export async function measureOverflow(page: Page): Promise<OverflowReport> {
  return page.evaluate(() => {
    const doc = document.documentElement;
    const width = doc.clientWidth;
    const describe = (element: PageElement): string => {
      const id = element.id ? `#${element.id}` : '';
      const classes = typeof element.className === 'string' && element.className.trim() ? `.${element.className.trim().split(/\s+/).join('.')}` : '';
      const label = element.getAttribute('aria-label') ?? element.getAttribute('data-scroll-region') ?? (element.textContent ?? '').trim().slice(0, 40);
      return `${element.tagName.toLowerCase()}${id}${classes} "${label}"`;
    };
    const clips = (element: PageElement): boolean => getComputedStyle(element).overflowX !== 'visible';
    // Clipped text (an ellipsis) is meant; a region the user scrolls sideways is what this looks for.
    const scrolls = (element: PageElement): boolean => ['auto', 'scroll'].includes(getComputedStyle(element).overflowX);
    const outside: string[] = [];
    const scrollers: { name: string; region: string | null; excess: number }[] = [];
    for (const element of Array.from(document.body.querySelectorAll('*'))) {
      const style = getComputedStyle(element);
      if (style.display === 'none' || style.visibility === 'hidden') continue;
      // Form controls scroll their own text; a visually hidden element is 1 px wide on purpose.
      const control = ['INPUT', 'SELECT', 'TEXTAREA'].includes(element.tagName);
      if (!control && scrolls(element) && element.scrollWidth > element.clientWidth + 1 && element.clientWidth > 1) {
        scrollers.push({ name: describe(element), region: element.getAttribute('data-scroll-region'), excess: element.scrollWidth - element.clientWidth });
      }
      const box = element.getBoundingClientRect();
      if (box.width === 0 || box.right <= width + 1) continue;
      let held = false;
      for (let parent = element.parentElement; parent && parent !== document.body; parent = parent.parentElement) {
        if (clips(parent)) {
          held = true;
          break;
        }
      }
      if (!held) outside.push(`${describe(element)} reaches x=${Math.round(box.right)} (window ${width})`);
    }
    return { pageExcess: Math.max(0, doc.scrollWidth - doc.clientWidth), outside, scrollers };
  });
}

/** Lines naming what overflows; scrollers named in `allowedRegions` (their data-scroll-region) are fine. */
export function overflowProblems(report: OverflowReport, allowedRegions: string[] = []): string[] {
  const problems: string[] = [];
  if (report.pageExcess > 0) problems.push(`the page scrolls sideways by ${report.pageExcess} px`);
  problems.push(...report.outside);
  for (const scroller of report.scrollers) {
    if (scroller.region !== null && allowedRegions.includes(scroller.region)) continue;
    problems.push(`${scroller.name} scrolls sideways by ${scroller.excess} px`);
  }
  return problems;
}

/** Resizes the window and waits two frames, so that layout and resize observers (the charts) have run. */
export async function resize(page: Page, size: WindowSize): Promise<void> {
  await page.setViewportSize(size);
  await page.evaluate(() => new Promise<void>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve()))));
}

export interface AxeViolation {
  id: string;
  impact: string;
  help: string;
  targets: string[];
}

let axeSource: string | undefined;

/**
 * axe-core's serious and critical violations on the page as it is. axe is loaded once per page load, by
 * evaluating its source through the debugging protocol: the app's CSP (script-src 'self') refuses the
 * inline <script> that page.addScriptTag would add, and the tests keep that CSP on.
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  const loaded = await page.evaluate(() => typeof window.axe === 'object');
  if (!loaded) {
    axeSource ??= fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
    await page.evaluate(axeSource);
  }
  return page.evaluate(async () => {
    const result = await window.axe!.run(document, { resultTypes: ['violations'] });
    return result.violations
      .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
      .map((violation) => ({ id: violation.id, impact: violation.impact ?? '', help: violation.help, targets: violation.nodes.slice(0, 5).map((node) => node.target.join(' ')) }));
  });
}

export function describeViolations(violations: AxeViolation[]): string {
  return violations.map((violation) => `${violation.impact} ${violation.id}: ${violation.help} (${violation.targets.join(', ')})`).join('\n');
}

/** Switches prefers-color-scheme and waits for the theme watchers (charts redraw) to run. */
export async function setColorScheme(page: Page, scheme: ColorScheme): Promise<void> {
  await page.emulateMedia({ colorScheme: scheme });
  await page.evaluate(() => new Promise<void>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve()))));
}

/** Where screenshots go when $NNSTUDIO_AUDIT_SHOTS names a folder (to look at the layouts by eye), else undefined. */
export function shotsDir(): string | undefined {
  const dir = process.env.NNSTUDIO_AUDIT_SHOTS;
  if (!dir) return undefined;
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

export async function screenshot(page: Page, dir: string, name: string, size: WindowSize, scheme: ColorScheme): Promise<void> {
  const file = path.join(dir, `${name.replace(/[^A-Za-z0-9_-]+/g, '-')}-${size.width}x${size.height}-${scheme}.png`);
  await page.screenshot({ path: file, fullPage: false, timeout: 10_000 });
}

/** The element that has focus, as "<tag> <its label or text>" ("body" when focus is lost). */
export async function focusedElement(page: Page): Promise<string> {
  return page.evaluate(() => {
    const element = document.activeElement;
    if (!element || element === document.body) return 'body';
    return `${element.tagName.toLowerCase()} ${(element.getAttribute('aria-label') ?? element.textContent ?? '').trim().replace(/\s+/g, ' ')}`;
  });
}
