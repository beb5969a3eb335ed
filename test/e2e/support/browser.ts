// The browser the end-to-end tests drive: the system's Chromium (Debian's /usr/bin/chromium, or
// $NNSTUDIO_CHROMIUM) through playwright-core, headless; playwright-core downloads no browser of its own.
import * as fs from 'node:fs';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';

export const chromiumEnv = 'NNSTUDIO_CHROMIUM';
const defaultChromium = '/usr/bin/chromium';

/** The screen size of the tests and the screenshots. */
export const viewport = { width: 1440, height: 900 };

export function chromiumPath(): string {
  return process.env[chromiumEnv] || defaultChromium;
}

/** Why the end-to-end tests cannot run here, or undefined when they can. */
export function browserMissing(): string | undefined {
  const executable = chromiumPath();
  try {
    fs.accessSync(executable, fs.constants.X_OK);
    return undefined;
  } catch {
    return `no Chromium at ${executable}: install it (apt-get install chromium) or set ${chromiumEnv} to a Chromium executable`;
  }
}

/** Under CI a missing browser is a failure, never a silent skip. */
export function runningInCi(): boolean {
  const ci = process.env.CI;
  return ci !== undefined && ci !== '' && ci !== '0' && ci.toLowerCase() !== 'false';
}

/**
 * The `skip` option for an end-to-end suite: a reason to skip locally when no Chromium is installed, false
 * otherwise (under CI the suite then runs, and its setup fails with the same reason).
 */
export function skipWithoutBrowser(): string | false {
  const missing = browserMissing();
  return missing && !runningInCi() ? `skipped: ${missing}` : false;
}

export async function launchChromium(): Promise<Browser> {
  const missing = browserMissing();
  if (missing) throw new Error(`end-to-end tests need Chromium: ${missing}`);
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    timeout: 30_000,
    // Containers and CI runners often have a small /dev/shm.
    args: ['--disable-dev-shm-usage'],
  });
}

export async function newContext(browser: Browser, colorScheme: 'light' | 'dark' = 'light'): Promise<BrowserContext> {
  return browser.newContext({ viewport, colorScheme, acceptDownloads: true, reducedMotion: 'reduce' });
}
