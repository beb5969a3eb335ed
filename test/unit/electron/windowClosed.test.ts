// Closing the window mid-training (docs/RELIABILITY.md, "Faults"): the compiled main process against a
// fake `electron` module (as in main.test.ts; each test file runs in its own process). Closing the last
// window quits (except on macOS); quitting waits for api.close(), which cancels the run within a step;
// the cancelled run is in the run history, and the app quits well before close()'s 10 s bound.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ipcChannels } from '../../../app/electron/ipc';
import { appEntryUrl } from '../../../app/electron/security';
import { loaderWithFakeElectron } from './fakeElectron';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-window-closed-'));
process.env.NNSTUDIO_DATA_DIR = dataDir;
const mainFile = path.join(__dirname, '..', '..', '..', 'app', 'electron', 'main.js');

type Listener = (...args: any[]) => any;

class FakeWindow {
  static all: FakeWindow[] = [];
  static getAllWindows = (): FakeWindow[] => FakeWindow.all;
  readonly events = new Map<string, Listener>();
  readonly sent: { channel: string; event: unknown }[] = [];
  destroyed = false;
  readonly webContents = {
    isDestroyed: () => this.destroyed,
    send: (channel: string, event: unknown) => this.sent.push({ channel, event }),
  };
  constructor() {
    FakeWindow.all.push(this);
  }
  once(name: string, listener: Listener) {
    this.events.set(name, listener);
  }
  on(name: string, listener: Listener) {
    this.events.set(name, listener);
  }
  loadURL() {
    return Promise.resolve();
  }
  isDestroyed = () => this.destroyed;
  show() {}
  /** What Electron does when the user closes the window. */
  close() {
    this.destroyed = true;
    FakeWindow.all = FakeWindow.all.filter((window) => window !== this);
    this.events.get('closed')?.();
  }
}

const appEvents = new Map<string, Listener>();
const ipcHandlers = new Map<string, Listener>();
let quits = 0;
let quitAt = 0;

const fakeElectron = {
  app: {
    enableSandbox: () => {},
    requestSingleInstanceLock: () => true,
    on: (name: string, listener: Listener) => appEvents.set(name, listener),
    whenReady: () => Promise.resolve(),
    getPath: () => os.tmpdir(),
    addRecentDocument: () => {},
    // Electron's quit: 'before-quit' first, which may prevent it; the app exits when nothing does
    quit: () => {
      let prevented = false;
      appEvents.get('before-quit')?.({ preventDefault: () => (prevented = true) });
      if (!prevented) {
        quits += 1;
        quitAt = performance.now();
      }
    },
  },
  BrowserWindow: FakeWindow,
  dialog: {},
  Menu: { buildFromTemplate: (template: unknown) => template, setApplicationMenu: () => {} },
  ipcMain: {
    handle: (channel: string, listener: Listener) => ipcHandlers.set(channel, listener),
    removeHandler: (channel: string) => ipcHandlers.delete(channel),
  },
  protocol: { registerSchemesAsPrivileged: () => {}, handle: () => {} },
  session: {
    defaultSession: {
      setPermissionRequestHandler: () => {},
      setPermissionCheckHandler: () => {},
      webRequest: { onBeforeRequest: () => {} },
    },
  },
};

const electronLoader = loaderWithFakeElectron(fakeElectron);

before(async () => {
  await electronLoader.load(mainFile);
  // the window opens once the last session is restored and the menu is built
  for (let waited = 0; FakeWindow.all.length === 0 && waited < 10_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
});
after(() => {
  electronLoader.restore();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const page = { senderFrame: { url: appEntryUrl, parent: null } };
async function call<T>(channel: string, payload: unknown): Promise<T> {
  const response = await ipcHandlers.get(ipcChannels.invoke)?.(page, channel, payload);
  if (!response || response.error) throw new Error(`${channel}: ${response?.error?.message}`);
  return response.result as T;
}

test('closing the window mid-training cancels the run cleanly, records it, then quits', { skip: process.platform === 'darwin' && 'macOS keeps the app open' }, async () => {
  const { id: datasetId } = await call<{ id: string }>('datasets:open', { source: { kind: 'mnist', limit: 1000 } });
  const { runId } = await call<{ runId: string }>('training:start', {
    datasetId, model: { layers: 'dense:256:relu,dense:10' }, epochs: 1000, batchSize: 64, device: 'cpu', threads: 1,
  });
  for (let i = 0; i < 500; i++) {
    const info = await call<{ lastStep?: unknown }>('training:status', { runId });
    if (info.lastStep) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const [window] = FakeWindow.all;
  assert.ok(window.sent.some((sent) => (sent.event as { event: string }).event === 'training:progress'), 'the window got progress events');

  const closedAt = performance.now();
  window.close();
  appEvents.get('window-all-closed')?.();
  for (let i = 0; i < 1000 && quits === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(quits, 1, 'the app quit once');
  const seconds = (quitAt - closedAt) / 1000;
  assert.ok(seconds < 5, `quit ${seconds.toFixed(2)} s after the window closed (a cancel takes one step, close() waits at most 10 s)`);

  const runsDir = path.join(dataDir, 'runs');
  const records = fs.readdirSync(runsDir).filter((name) => name.endsWith('.json')).map((name) => JSON.parse(fs.readFileSync(path.join(runsDir, name), 'utf8')));
  assert.equal(records.length, 1);
  assert.equal(records[0].status, 'cancelled', 'the run history has the cancelled run');
  assert.ok(fs.readdirSync(runsDir).some((name) => name.endsWith('.safetensors')), 'with its model');
  const afterClose = await ipcHandlers.get(ipcChannels.invoke)?.(page, 'devices:list', {});
  assert.equal(afterClose?.error?.message, 'the session is closed');
});
