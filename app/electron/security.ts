// The window's security settings in one place, as plain values and functions (no runtime import of
// electron), so unit tests can read them: the webPreferences, the CSP, the app:// origin the page is served
// from, which file an app:// URL may read, and which frames may call the API.
import * as path from 'node:path';
import type { WebPreferences } from 'electron';
import { contentTypeFor } from '../core/files/contentTypes';

/** The page is served from app://nnstudio/ (a privileged standard scheme): a real origin for 'self' in the CSP. */
export const appScheme = 'app';
export const appHost = 'nnstudio';
export const appOrigin = `${appScheme}://${appHost}`;
export const appEntryUrl = `${appOrigin}/index.html`;

/** No Node in the page, the page's JavaScript isolated from the preload's, the Chromium sandbox on. */
export const windowWebPreferences = Object.freeze({
  contextIsolation: true,
  sandbox: true,
  nodeIntegration: false,
  nodeIntegrationInWorker: false,
  nodeIntegrationInSubFrames: false,
  webSecurity: true,
  allowRunningInsecureContent: false,
  experimentalFeatures: false,
  webviewTag: false,
  // A file dropped outside the drop zone must not replace the app with the file.
  navigateOnDragDrop: false,
  spellcheck: false,
} satisfies WebPreferences);

/**
 * Only the app's own files: no inline or eval'd script, no inline style element, nothing from another
 * origin. The page talks to the engine over IPC (the preload), so it needs no network at all; images may
 * be data: or blob: URLs (the digit canvas, image previews).
 */
export const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-src 'none'",
  "worker-src 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers on every app:// response. */
export { contentTypeFor };

export function responseHeaders(file: string): Record<string, string> {
  return {
    'Content-Type': contentTypeFor(file),
    'Content-Security-Policy': contentSecurityPolicy,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': 'no-store',
  };
}

/** Module scripts need a JavaScript MIME type; unknown files are served as bytes. */
/**
 * The file under `rendererDir` that an app:// URL names, or undefined when the URL is not ours or would
 * leave the folder ("/" is index.html).
 */
export function rendererFileFor(url: string, rendererDir: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined; // not a URL: not one of ours
  }
  if (parsed.protocol !== `${appScheme}:` || parsed.host !== appHost) return undefined;
  let relative: string;
  try {
    relative = decodeURIComponent(parsed.pathname);
  } catch {
    return undefined; // a malformed %-escape names no file
  }
  if (relative.includes('\0')) return undefined;
  if (relative === '/' || relative === '') relative = '/index.html';
  const root = path.resolve(rendererDir);
  const file = path.resolve(root, `.${relative}`);
  return file.startsWith(root + path.sep) ? file : undefined;
}

/** The frame that sent an IPC message, as far as the trust check needs it. */
export interface SenderFrame {
  url: string;
  /** True for the window's top frame (not an iframe). */
  isMainFrame: boolean;
}

/** Only our own page's top frame may call the API (not an iframe, not a page navigated elsewhere). */
export function isTrustedSender(frame: SenderFrame | null | undefined): boolean {
  if (!frame || !frame.isMainFrame) return false;
  try {
    const url = new URL(frame.url);
    return url.protocol === `${appScheme}:` && url.host === appHost;
  } catch {
    return false; // a frame whose URL does not parse is not our page
  }
}
