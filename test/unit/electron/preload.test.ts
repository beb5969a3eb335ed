// The compiled preload run as Electron runs a sandboxed preload: a function of (require, process,
// exports, module) whose require knows 'electron' alone. It must expose exactly the NnStudioDesktopApi
// (invoke, onEvent, dialogs.openFile, dialogs.saveFile), nothing of Node, and only talk to ipcRenderer.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ApiEvent, ApiResponse, NnStudioDesktopApi } from '../../../app/api';
import { ipcChannels } from '../../../app/electron/ipc';

const preloadFile = path.join(__dirname, '..', '..', '..', 'app', 'electron', 'preload.js');

interface Loaded {
  exposed: { key: string; api: NnStudioDesktopApi }[];
  invoked: unknown[][];
  listeners: Map<string, Set<(...args: unknown[]) => void>>;
  /** What the next ipcRenderer.invoke answers. */
  answer: { next: () => Promise<unknown> };
  required: string[];
}

function loadPreload(): Loaded {
  const loaded: Loaded = { exposed: [], invoked: [], listeners: new Map(), answer: { next: async () => ({ result: 'ok' }) }, required: [] };
  // Like Electron's, on and removeListener return ipcRenderer itself (EventEmitter chaining): a preload
  // function that passed their result on would hand the page the IPC object.
  const ipcRenderer = {
    invoke: (...args: unknown[]) => {
      loaded.invoked.push(args);
      return loaded.answer.next();
    },
    on: (channel: string, listener: (...args: unknown[]) => void) => {
      if (!loaded.listeners.has(channel)) loaded.listeners.set(channel, new Set());
      loaded.listeners.get(channel)?.add(listener);
      return ipcRenderer;
    },
    removeListener: (channel: string, listener: (...args: unknown[]) => void) => {
      loaded.listeners.get(channel)?.delete(listener);
      return ipcRenderer;
    },
  };
  const fakeElectron = {
    contextBridge: {
      exposeInMainWorld: (key: string, api: NnStudioDesktopApi) => loaded.exposed.push({ key, api }),
    },
    ipcRenderer,
  };
  // Like Electron's preloadRequire: anything but the allowed modules is "module not found".
  const sandboxRequire = (name: string): unknown => {
    loaded.required.push(name);
    if (name === 'electron') return fakeElectron;
    throw new Error(`module not found: ${name}`);
  };
  const exports = {};
  const run = new Function('require', 'process', 'exports', 'module', fs.readFileSync(preloadFile, 'utf8'));
  run(sandboxRequire, {}, exports, { exports });
  return loaded;
}

describe('the preload', () => {
  test("requires 'electron' alone (a sandboxed preload can load nothing else)", () => {
    const source = fs.readFileSync(preloadFile, 'utf8');
    const requires = [...source.matchAll(/require\(\s*["'`]([^"'`]+)["'`]\s*\)/g)].map((match) => match[1]);
    assert.deepEqual(requires, ['electron']);
    assert.doesNotMatch(source, /import\(/, 'no dynamic import');
    assert.deepEqual(loadPreload().required, ['electron']);
  });

  test('exposes exactly invoke, onEvent and dialogs as window.nnstudio, all functions', () => {
    const { exposed } = loadPreload();
    assert.equal(exposed.length, 1);
    assert.equal(exposed[0].key, 'nnstudio');
    const api = exposed[0].api as unknown as Record<string, unknown>;
    assert.deepEqual(Object.keys(api).sort(), ['dialogs', 'invoke', 'onEvent']);
    assert.equal(typeof api.invoke, 'function');
    assert.equal(typeof api.onEvent, 'function');
    const dialogs = api.dialogs as Record<string, unknown>;
    assert.deepEqual(Object.keys(dialogs).sort(), ['openFile', 'saveFile']);
    for (const value of Object.values(dialogs)) assert.equal(typeof value, 'function');
    // Nothing of Node or Electron rides along (prototype included).
    assert.equal(Object.getPrototypeOf(api), Object.prototype);
    for (const name of ['require', 'process', 'Buffer', 'ipcRenderer', 'electron', 'send', 'on']) assert.equal(name in api, false, name);
  });

  test('invoke and the dialogs go through the one invoke channel', async () => {
    const loaded = loadPreload();
    const { api } = loaded.exposed[0];
    assert.deepEqual(await api.invoke('training:status', { runId: 'run-1' }), { result: 'ok' });
    await api.dialogs.openFile({ purpose: 'dataset' });
    await api.dialogs.saveFile({ purpose: 'model', defaultName: 'iris' });
    assert.deepEqual(loaded.invoked, [
      [ipcChannels.invoke, 'training:status', { runId: 'run-1' }],
      [ipcChannels.invoke, 'dialog:openFile', { purpose: 'dataset' }],
      [ipcChannels.invoke, 'dialog:saveFile', { purpose: 'model', defaultName: 'iris' }],
    ]);
  });

  test('a rejected invoke (no handler in the main process) is an error value', async () => {
    const loaded = loadPreload();
    loaded.answer.next = () => Promise.reject(new Error("No handler registered for 'nnstudio:invoke'"));
    const response = (await loaded.exposed[0].api.invoke('devices:list', {})) as ApiResponse<unknown>;
    assert.match(response.error?.message ?? '', /did not answer: No handler registered/);
  });

  test('onEvent hands the page the API event alone, and unsubscribes', () => {
    const loaded = loadPreload();
    const received: unknown[][] = [];
    const unsubscribe = loaded.exposed[0].api.onEvent((...args: unknown[]) => received.push(args));
    const listeners = loaded.listeners.get(ipcChannels.event);
    assert.equal(listeners?.size, 1);
    const event: ApiEvent = { event: 'training:done', payload: { runId: 'run-1', status: 'cancelled', message: 'cancelled', history: [] } };
    const ipcEvent = { sender: { send: () => {} }, senderId: 0 };
    for (const listener of listeners ?? []) listener(ipcEvent, event);
    assert.deepEqual(received, [[event]]);
    unsubscribe();
    assert.equal(listeners?.size, 0);
  });
  test('the source touches nothing of Node: no process, Buffer, global or eval', () => {
    const source = fs.readFileSync(preloadFile, 'utf8');
    // Code only: the comments' and the error message's words ("main process") are no use of `process`.
    const code = source
      .replace(/\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm, '')
      .replace(/`[^`]*`/g, '""')
      .replace(/'[^'\n]*'|"[^"\n]*"/g, '""');
    assert.doesNotMatch(code, /\bprocess\b|\bBuffer\b|\bglobal(This)?\b|\beval\b|\bFunction\(/);
    assert.match(source, /exposeInMainWorld\('nnstudio'/);
  });

  test('the functions hand back plain data only: invoke\'s answer, events\' payloads, nothing from IPC', async () => {
    const loaded = loadPreload();
    const { api } = loaded.exposed[0];
    // Called detached, as the page gets them through contextBridge: no reliance on `this`.
    const { invoke, onEvent } = api;
    const { openFile } = api.dialogs;
    assert.deepEqual(await invoke('devices:list', undefined as never), { result: 'ok' });
    assert.deepEqual(await openFile({ purpose: 'model' }), { result: 'ok' });
    // Only (channel, payload) cross: extra arguments from the page are dropped.
    await (invoke as (...args: unknown[]) => Promise<unknown>)('devices:list', {}, 'extra', { sender: 'x' });
    assert.deepEqual(loaded.invoked.at(-1), [ipcChannels.invoke, 'devices:list', {}]);

    // A failure is a plain { error: { message } }, not an Error (no stack, no prototype of the preload's).
    loaded.answer.next = () => Promise.reject(new Error('boom'));
    const failed = (await invoke('devices:list', {} as never)) as unknown as { error: Record<string, unknown> };
    assert.deepEqual(Object.keys(failed), ['error']);
    assert.deepEqual(Object.keys(failed.error), ['message']);
    assert.equal(Object.getPrototypeOf(failed.error), Object.prototype);
    assert.equal(typeof failed.error.message, 'string');

    // onEvent gives back an unsubscriber returning nothing (removeListener's result is ipcRenderer).
    const received: unknown[][] = [];
    const unsubscribe = onEvent((...args: unknown[]) => received.push(args));
    assert.equal(typeof unsubscribe, 'function');
    for (const listener of loaded.listeners.get(ipcChannels.event) ?? []) listener({ sender: {}, ports: [] }, { event: 'x', payload: 1 }, 'extra');
    assert.deepEqual(received, [[{ event: 'x', payload: 1 }]], 'the payload alone, no IPC event, no extra arguments');
    assert.equal(unsubscribe(), undefined);
  });
});
