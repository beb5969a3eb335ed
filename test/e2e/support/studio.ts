// One NN Studio session for a test file: `nnstudio serve` in a child process, headless Chromium, and a
// page on the printed URL, connected. close() tears all of it down and never throws, so an `after` hook
// can call it whatever happened; on a failure, artifacts() keeps a screenshot and the server's output.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium, newContext } from './browser';
import { scratchDir } from './data';
import { repoRoot, startServeProcess, type ServeProcess } from './serve';

export const failuresDir = path.join(repoRoot, 'dist', 'e2e-failures');

export interface Studio {
  page: Page;
  context: BrowserContext;
  browser: Browser;
  serve: ServeProcess;
  /** Uncaught page errors and console errors seen so far (a clean run has none). */
  pageErrors: string[];
  /** Writes <name>.png and <name>.log under dist/e2e-failures; returns where. */
  artifacts(name: string): Promise<string>;
  close(): Promise<void>;
}

export interface StudioOptions {
  colorScheme?: 'light' | 'dark';
  /** Playwright's per-action wait (clicks, fills, waits). */
  actionTimeoutMs?: number;
}

export async function openStudio(options: StudioOptions = {}): Promise<Studio> {
  const closers: (() => Promise<unknown>)[] = [];
  // Each part gets 10 s to close, so teardown itself cannot hang (npm's test:e2e adds --test-force-exit).
  const close = async () => {
    for (const closer of closers.splice(0).reverse()) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([closer().catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, 10_000)))]);
      clearTimeout(timer);
    }
  };
  try {
    // The browser first: without one there is no point starting the server (and the message says why).
    const browser = await launchChromium();
    closers.push(() => browser.close());
    const serve = await startServeProcess();
    closers.push(() => serve.close());
    const context = await newContext(browser, options.colorScheme);
    const page = await context.newPage();
    page.setDefaultTimeout(options.actionTimeoutMs ?? 15_000);
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      // A failed request is reported below with its URL; the console's copy has none.
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) pageErrors.push(`console error: ${message.text()}`);
    });
    page.on('response', (response) => {
      if (response.status() >= 400) pageErrors.push(`HTTP ${response.status()} for ${new URL(response.url()).pathname}`);
    });
    await page.goto(serve.browserUrl);
    await waitConnected(page);

    const artifacts = async (name: string): Promise<string> => {
      fs.mkdirSync(failuresDir, { recursive: true });
      const base = path.join(failuresDir, name.replace(/[^A-Za-z0-9_-]+/g, '-'));
      await page.screenshot({ path: `${base}.png`, fullPage: true, timeout: 5_000 }).catch(() => undefined);
      fs.writeFileSync(`${base}.log`, `${pageErrors.join('\n')}\n--- nnstudio serve ---\n${serve.output()}`);
      return base;
    };
    return { page, context, browser, serve, pageErrors, artifacts, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** The renderer says "Connecting to NN Studio…" until its WebSocket is open. */
export async function waitConnected(page: Page): Promise<void> {
  await page.getByRole('heading', { level: 1 }).first().waitFor();
  await page.getByRole('status').filter({ hasText: /Connecting|reconnecting/ }).waitFor({ state: 'detached' });
}

/** A describe block's studio and scratch folder: `prepare` writes its files, both are gone after the block. */
export interface ScratchStudio {
  readonly studio: Studio | undefined;
  readonly dir: string;
}

export function useStudioWithScratch(prefix: string, prepare: (dir: string) => void): ScratchStudio {
  const state: { studio: Studio | undefined; dir: string } = { studio: undefined, dir: '' };
  before(async () => {
    state.dir = scratchDir(prefix);
    prepare(state.dir);
    state.studio = await openStudio();
  }, { timeout: 60_000 });
  after(async () => {
    await state.studio?.close();
    if (state.dir) fs.rmSync(state.dir, { recursive: true, force: true });
  });
  return state;
}
