// The compiled main process run against a fake `electron` module (no Electron binary here): the window's
// webPreferences and preload, app:// serving the renderer with the CSP, navigation, new windows,
// permissions and remote requests refused, the IPC handler registered, and trainings closed on quit.
import { after, before, describe, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ipcChannels } from '../../../app/electron/ipc';
import { appEntryUrl, contentSecurityPolicy, windowWebPreferences } from '../../../app/electron/security';
import { loaderWithFakeElectron } from './fakeElectron';

const electronDir = path.join(__dirname, '..', '..', '..', 'app', 'electron');
const mainFile = path.join(electronDir, 'main.js');
const rendererIndex = path.join(__dirname, '..', '..', '..', 'renderer', 'index.html');

type Listener = (...args: any[]) => any;

class FakeWindow {
  static all: FakeWindow[] = [];
  static getAllWindows = (): FakeWindow[] => FakeWindow.all;
  readonly loaded: string[] = [];
  readonly events = new Map<string, Listener>();
  readonly webContents = { isDestroyed: () => false, send: () => {} };
  constructor(readonly options: { webPreferences: Record<string, unknown> }) {
    FakeWindow.all.push(this);
  }
  once(name: string, listener: Listener) {
    this.events.set(name, listener);
  }
  on(name: string, listener: Listener) {
    this.events.set(name, listener);
  }
  loadURL(url: string) {
    this.loaded.push(url);
    return Promise.resolve();
  }
  isDestroyed = () => false;
  show() {}
}

const seen = {
  order: [] as string[],
  privileged: [] as { scheme: string; privileges: Record<string, boolean> }[],
  protocolHandlers: new Map<string, (request: { url: string }) => Promise<Response>>(),
  appEvents: new Map<string, Listener>(),
  ipcHandlers: new Map<string, Listener>(),
  otherIpc: [] as string[],
  permissionRequest: undefined as Listener | undefined,
  permissionCheck: undefined as Listener | undefined,
  beforeRequest: undefined as { filter: { urls: string[] }; listener: Listener } | undefined,
  quits: 0,
  menu: undefined as unknown,
};

const fakeElectron = {
  app: {
    enableSandbox: () => seen.order.push('enableSandbox'),
    requestSingleInstanceLock: () => true,
    on: (name: string, listener: Listener) => seen.appEvents.set(name, listener),
    whenReady: () => Promise.resolve(),
    getPath: () => os.tmpdir(),
    addRecentDocument: () => {},
    quit: () => {
      seen.quits += 1;
      seen.appEvents.get('before-quit')?.({ preventDefault: () => {} });
    },
  },
  BrowserWindow: FakeWindow,
  dialog: {},
  Menu: { buildFromTemplate: (template: unknown) => template, setApplicationMenu: (menu: unknown) => (seen.menu = menu) },
  ipcMain: {
    handle: (channel: string, listener: Listener) => seen.ipcHandlers.set(channel, listener),
    removeHandler: (channel: string) => seen.ipcHandlers.delete(channel),
    // Any other way in (fire-and-forget messages, one-shot handlers) is recorded: there must be none.
    on: (channel: string) => seen.otherIpc.push(`on ${channel}`),
    once: (channel: string) => seen.otherIpc.push(`once ${channel}`),
    handleOnce: (channel: string) => seen.otherIpc.push(`handleOnce ${channel}`),
    addListener: (channel: string) => seen.otherIpc.push(`addListener ${channel}`),
  },
  protocol: {
    registerSchemesAsPrivileged: (schemes: typeof seen.privileged) => {
      seen.order.push('registerSchemesAsPrivileged');
      seen.privileged.push(...schemes);
    },
    handle: (scheme: string, handler: (request: { url: string }) => Promise<Response>) => seen.protocolHandlers.set(scheme, handler),
  },
  session: {
    defaultSession: {
      setPermissionRequestHandler: (listener: Listener) => (seen.permissionRequest = listener),
      setPermissionCheckHandler: (listener: Listener) => (seen.permissionCheck = listener),
      webRequest: { onBeforeRequest: (filter: { urls: string[] }, listener: Listener) => (seen.beforeRequest = { filter, listener }) },
    },
  },
};

const electronLoader = loaderWithFakeElectron(fakeElectron);

// the session keeps its last state in the data folder: a temporary one here
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-electron-main-'));
process.env.NNSTUDIO_DATA_DIR = dataDir;

before(async () => {
  await electronLoader.load(mainFile);
  // the window opens once the last session is restored and the menu is built
  for (let waited = 0; FakeWindow.all.length === 0 && waited < 10_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
});
after(() => {
  electronLoader.restore();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('the main process', () => {
  test('registers app:// as a privileged scheme and turns the sandbox on before the app is ready', () => {
    assert.deepEqual(seen.order.slice(0, 2), ['registerSchemesAsPrivileged', 'enableSandbox']);
    assert.deepEqual(seen.privileged, [{ scheme: 'app', privileges: { standard: true, secure: true, supportFetchAPI: true } }]);
  });

  test('a File menu for projects: open, open recent, save, save as', () => {
    const [file] = seen.menu as { label: string; submenu: { label?: string; role?: string; enabled?: boolean }[] }[];
    assert.equal(file.label, 'File');
    assert.deepEqual(file.submenu.filter((item) => item.label).map((item) => item.label), ['Open Project…', 'Open Recent', 'Save Project', 'Save Project As…']);
    assert.equal(file.submenu.find((item) => item.label === 'Open Recent')?.enabled, false, 'no recent project yet');
  });

  test('opens one window with the locked-down webPreferences and the compiled preload', () => {
    assert.equal(FakeWindow.all.length, 1);
    const [window] = FakeWindow.all;
    assert.deepEqual(window.options.webPreferences, { ...windowWebPreferences, preload: path.join(electronDir, 'preload.js') });
    assert.ok(fs.existsSync(window.options.webPreferences.preload as string));
    assert.deepEqual(window.loaded, [appEntryUrl]);
  });

  test('serves the built renderer over app:// with the CSP, and nothing outside it', async (t) => {
    const handler = seen.protocolHandlers.get('app');
    assert.ok(handler);
    const outside = await handler({ url: 'app://nnstudio/..%2f..%2fpackage.json' });
    assert.equal(outside.status, 404);
    assert.equal((await handler({ url: 'app://nnstudio/no-such-file.js' })).status, 404);
    if (!fs.existsSync(rendererIndex)) return t.skip('dist/renderer is not built (npm run build:renderer)');
    const page = await handler({ url: 'app://nnstudio/index.html' });
    assert.equal(page.status, 200);
    assert.equal(page.headers.get('content-security-policy'), contentSecurityPolicy);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(await page.text(), /<title>NN Studio<\/title>/);
  });

  test('a renderer file that cannot be read: 500, and a line on stderr naming the file and the reason', async () => {
    const handler = seen.protocolHandlers.get('app');
    assert.ok(handler);
    const realReadFile = fs.promises.readFile.bind(fs.promises);
    const readFile = mock.method(fs.promises, 'readFile', async (file: fs.PathLike, ...rest: unknown[]) => {
      if (String(file).endsWith('locked.js')) throw Object.assign(new Error('EIO: i/o error, read'), { code: 'EIO' });
      return realReadFile(file, ...(rest as []));
    });
    const written: string[] = [];
    const write = mock.method(process.stderr, 'write', (chunk: string | Uint8Array) => written.push(String(chunk)) > 0);
    try {
      const response = await handler({ url: 'app://nnstudio/locked.js' });
      assert.equal(response.status, 500);
    } finally {
      write.mock.restore();
      readFile.mock.restore();
    }
    assert.match(written.join(''), /^nnstudio: error: app:\/\/: reading .*locked\.js for app:\/\/nnstudio\/locked\.js: EIO: i\/o error, read$/m);
  });

  test('every web contents: navigation, redirects, webviews and new windows refused', () => {
    const created = seen.appEvents.get('web-contents-created');
    assert.ok(created);
    const events = new Map<string, Listener>();
    let openHandler: Listener | undefined;
    created({}, { on: (name: string, listener: Listener) => events.set(name, listener), setWindowOpenHandler: (listener: Listener) => (openHandler = listener) });
    // Even our own origin and file: URLs: the app is one page, so no navigation is ever wanted.
    for (const url of ['https://example.com/', 'app://nnstudio/index.html', 'file:///etc/passwd', 'javascript:alert(1)']) {
      for (const name of ['will-navigate', 'will-redirect', 'will-attach-webview']) {
        let prevented = false;
        events.get(name)?.({ preventDefault: () => (prevented = true) }, url);
        assert.ok(prevented, `${name} ${url}`);
      }
      assert.deepEqual(openHandler?.({ url }), { action: 'deny' }, url);
    }
  });

  test('no permissions and no request to the network', () => {
    let granted: boolean | undefined;
    seen.permissionRequest?.({}, 'media', (answer: boolean) => (granted = answer));
    assert.equal(granted, false);
    assert.equal(seen.permissionCheck?.({}, 'clipboard-read'), false);
    assert.deepEqual(seen.beforeRequest?.filter.urls.slice(0, 4), ['http://*/*', 'https://*/*', 'ws://*/*', 'wss://*/*']);
    let answer: unknown;
    seen.beforeRequest?.listener({ url: 'https://example.com/' }, (response: unknown) => (answer = response));
    assert.deepEqual(answer, { cancel: true });
  });

  test('handles the API on the one invoke channel, for our page only', async () => {
    assert.deepEqual([...seen.ipcHandlers.keys()], [ipcChannels.invoke]);
    assert.deepEqual(seen.otherIpc, [], 'no ipcMain.on/once/handleOnce: every message goes through the validating router');
    const handler = seen.ipcHandlers.get(ipcChannels.invoke);
    const fromPage = await handler?.({ senderFrame: { url: appEntryUrl, parent: null } }, 'models:presets', {});
    assert.ok(Array.isArray(fromPage.result) && fromPage.result.length > 0, JSON.stringify(fromPage));
    const fromElsewhere = await handler?.({ senderFrame: { url: 'https://example.com/', parent: null } }, 'models:presets', {});
    assert.ok(fromElsewhere.error);
  });

  test('quitting waits for the session to close (trainings cancelled), then quits', async () => {
    const beforeQuit = seen.appEvents.get('before-quit');
    let prevented = false;
    beforeQuit?.({ preventDefault: () => (prevented = true) });
    assert.ok(prevented);
    for (let i = 0; i < 100 && seen.quits === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(seen.quits, 1);
  });
});
