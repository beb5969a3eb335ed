// Electron's main process: one window on the built renderer (dist/renderer, served as app://nnstudio/ with
// a strict CSP), the UI API of app/api/session.ts over IPC (ipc.ts), nothing else. The engine trains on
// its own thread (the native addon's worker), so the API can live here without freezing the window.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { app, BrowserWindow, dialog, ipcMain, Menu, protocol, session, type WebContents } from 'electron';
import { createApi } from '../api/session';
import { stderrLogger } from '../core/log';
import { electronDialogs, registerIpc } from './ipc';
import { installProjectsMenu } from './projectsMenu';
import { appEntryUrl, appScheme, rendererFileFor, responseHeaders, windowWebPreferences } from './security';

/** dist/renderer, next to dist/app where this file runs from (inside app.asar when packaged). */
const rendererDir = path.resolve(__dirname, '..', '..', 'renderer');
const preloadFile = path.join(__dirname, 'preload.js');

// Before ready: app:// behaves like https (a real origin for 'self', secure context).
protocol.registerSchemesAsPrivileged([{ scheme: appScheme, privileges: { standard: true, secure: true, supportFetchAPI: true } }]);
app.enableSandbox();

let mainWindow: BrowserWindow | undefined;
/** Failures nobody asked about (a renderer file that cannot be read, the session's own). */
const logger = stderrLogger;

/** The app's files only, each with the CSP; anything else is 404. A file that cannot be read is logged and 500. */
function serveRenderer(): void {
  protocol.handle(appScheme, async (request) => {
    const file = rendererFileFor(request.url, rendererDir);
    if (!file) return new Response('not found', { status: 404 });
    try {
      return new Response(await fs.promises.readFile(file), { headers: responseHeaders(file) });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') return new Response('not found', { status: 404 });
      logger.error(`app://: reading ${file} for ${request.url}`, error);
      return new Response('internal error', { status: 500 });
    }
  });
}

/** No permissions (camera, notifications, …) and no request leaves the machine, whatever the page tries. */
function lockDownSession(): void {
  const ses = session.defaultSession;
  ses.setPermissionRequestHandler((_contents, _permission, callback) => callback(false));
  ses.setPermissionCheckHandler(() => false);
  ses.webRequest.onBeforeRequest({ urls: ['http://*/*', 'https://*/*', 'ws://*/*', 'wss://*/*', 'ftp://*/*'] }, (_details, callback) =>
    callback({ cancel: true }),
  );
}

/** Every web contents (the window and anything it might create): no navigation, no new windows, no webviews. */
function lockDownContents(contents: WebContents): void {
  contents.on('will-navigate', (event) => event.preventDefault());
  contents.on('will-redirect', (event) => event.preventDefault());
  contents.on('will-attach-webview', (event) => event.preventDefault());
  contents.setWindowOpenHandler(() => ({ action: 'deny' }));
}

function createWindow(): BrowserWindow {
  const window = new BrowserWindow({
    width: 1280,
    height: 860,
    minWidth: 900,
    minHeight: 600,
    title: 'NN Studio',
    show: false,
    autoHideMenuBar: true,
    webPreferences: { ...windowWebPreferences, preload: preloadFile },
  });
  window.once('ready-to-show', () => window.show());
  window.on('closed', () => {
    if (mainWindow === window) mainWindow = undefined;
  });
  void window.loadURL(appEntryUrl);
  return window;
}

function start(): void {
  // The session keeps itself in the data folder (the last session), and starts from it.
  const api = createApi({ logger, keepLastSession: true });
  let closed = false;

  app.on('web-contents-created', (_event, contents) => lockDownContents(contents));
  registerIpc({
    ipcMain,
    api,
    dialogs: electronDialogs(dialog, () => mainWindow, () => app.getPath('documents')),
    windows: () => (mainWindow && !mainWindow.isDestroyed() ? [mainWindow] : []),
  });

  // A second launch focuses the open window instead of starting a second session.
  app.on('second-instance', () => {
    if (!mainWindow) return;
    if (mainWindow.isMinimized()) mainWindow.restore();
    mainWindow.focus();
  });
  app.on('window-all-closed', () => {
    if (process.platform !== 'darwin') app.quit();
  });
  // Quitting cancels running trainings and removes uploads first (bounded by api.close()).
  app.on('before-quit', (event) => {
    if (closed) return;
    event.preventDefault();
    void api.close().finally(() => {
      closed = true;
      app.quit();
    });
  });

  void app.whenReady().then(async () => {
    lockDownSession();
    serveRenderer();
    await api.openLastSession().catch((error: unknown) => logger.warn('restoring the last session', error));
    await installProjectsMenu({ app, api, dialog, Menu, window: () => mainWindow, logger });
    mainWindow = createWindow();
    app.on('activate', () => {
      if (BrowserWindow.getAllWindows().length === 0) mainWindow = createWindow();
    });
  });
}

if (app.requestSingleInstanceLock()) start();
else app.quit();
