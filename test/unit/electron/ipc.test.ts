// The IPC router (app/electron/ipc.ts) without Electron: the sender check, the dialogs' zod schemas, the
// rule that paths come only from dialogs, and the wiring to ipcMain and the window's events.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { z } from 'zod';
import { createApi, type ApiEvent, type ApiResponse, type ChosenFile, type DatasetInfo } from '../../../app/api';
import { channels, payloadSchemas } from '../../../app/api/schemas';
import { createIpcRouter, dialogSchemas, ipcChannels, registerIpc, type DialogBackend } from '../../../app/electron/ipc';
import { irisCsv, resultOf } from '../api/helpers';

const page = { url: 'app://nnstudio/index.html', isMainFrame: true };
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-ipc-test-'));
after(() => fs.rmSync(scratch, { recursive: true, force: true }));

/** An api whose dispatch records its calls and answers { result: channel }. */
function recordingApi() {
  const calls: { channel: string; payload: unknown }[] = [];
  return {
    calls,
    dispatch: async (channel: string, payload: unknown): Promise<ApiResponse<unknown>> => {
      calls.push({ channel, payload });
      return { result: channel };
    },
  };
}

/** Dialogs that answer with the next queued path (undefined: cancelled) and record what they were asked. */
function fakeDialogs(answers: (string | undefined)[]) {
  const asked: { kind: 'open' | 'save'; arg: string }[] = [];
  const dialogs: DialogBackend = {
    openFile: async (purpose) => {
      asked.push({ kind: 'open', arg: purpose });
      return answers.shift();
    },
    saveFile: async (fileName) => {
      asked.push({ kind: 'save', arg: fileName });
      return answers.shift();
    },
  };
  return { asked, dialogs };
}

describe('the sender check', () => {
  test('refuses iframes, other pages and missing frames before anything runs', async () => {
    const api = recordingApi();
    const router = createIpcRouter(api, fakeDialogs([]).dialogs);
    for (const sender of [{ ...page, isMainFrame: false }, { url: 'https://evil.example/', isMainFrame: true }, undefined, null]) {
      const response = await router.handle(sender, 'devices:list', {});
      assert.match(response.error?.message ?? '', /did not come from the NN Studio window/);
    }
    assert.equal(api.calls.length, 0);
  });

  test('passes our page on to dispatch, payload untouched', async () => {
    const api = recordingApi();
    const router = createIpcRouter(api, fakeDialogs([]).dialogs);
    assert.deepEqual(await router.handle(page, 'training:status', { runId: 'run-1' }), { result: 'training:status' });
    assert.deepEqual(api.calls, [{ channel: 'training:status', payload: { runId: 'run-1' } }]);
  });
});

describe('validation', () => {
  test('a channel that is not a string is an error naming it', async () => {
    const router = createIpcRouter(recordingApi(), fakeDialogs([]).dialogs);
    const response = await router.handle(page, 42, {});
    assert.equal(response.error?.field, 'channel');
  });

  test('dialog payloads are zod-validated, naming the field', async () => {
    const { asked, dialogs } = fakeDialogs([]);
    const router = createIpcRouter(recordingApi(), dialogs);
    const badPurpose = await router.handle(page, 'dialog:openFile', { purpose: 'anything' });
    assert.equal(badPurpose.error?.field, 'purpose');
    assert.match(badPurpose.error?.message ?? '', /^dialog:openFile: purpose: /);
    const extra = await router.handle(page, 'dialog:openFile', { purpose: 'model', defaultPath: '/etc' });
    assert.equal(extra.error?.field, 'defaultPath');
    const noName = await router.handle(page, 'dialog:saveFile', { purpose: 'model' });
    assert.equal(noName.error?.field, 'defaultName');
    const missing = await router.handle(page, 'dialog:saveFile', undefined);
    assert.ok(missing.error);
    assert.equal(asked.length, 0, 'no dialog opened for an invalid request');
  });

  test("an invalid API payload gets the API's own error", async () => {
    const api = createApi();
    try {
      const router = createIpcRouter(api, fakeDialogs([]).dialogs);
      const response = await router.handle(page, 'datasets:open', { source: { kind: 'path', path: 42 } });
      assert.equal(response.error?.field, 'source.path');
      const unknown = await router.handle(page, 'fs:readFile', { path: '/etc/passwd' });
      assert.match(unknown.error?.message ?? '', /unknown channel/);
    } finally {
      await api.close();
    }
  });
});

describe('every channel the window can name is validated', () => {
  const allChannels = [...channels, ...Object.keys(dialogSchemas)];

  test('a payload of the wrong type, or an object with an unknown key, is an error value on every channel; no dialog opens', async () => {
    const api = createApi();
    const { asked, dialogs } = fakeDialogs([]);
    try {
      const router = createIpcRouter(api, dialogs);
      assert.ok(allChannels.length >= 25, `${allChannels.length} channels`);
      for (const channel of allChannels) {
        const wrongType = await router.handle(page, channel, 42);
        assert.ok(wrongType.error, `${channel} took 42`);
        assert.match(wrongType.error.message, new RegExp(`^${channel}: `), `${channel}: ${wrongType.error.message}`);
        const unknownKey = await router.handle(page, channel, { smuggled: '/etc/passwd' });
        assert.ok(unknownKey.error, `${channel} took an unknown key`);
      }
      assert.equal(asked.length, 0);
    } finally {
      await api.close();
    }
  });

  test('every payload field that names a file on disk is one the router checks against the dialogs', () => {
    // Walks each channel's schema (as JSON Schema) for fields called *path: a new one must be added to
    // payloadPaths in ipc.ts (and this list), or a page could name any file.
    const found: string[] = [];
    const walk = (schema: Record<string, unknown>, prefix: string, channel: string): void => {
      for (const [key, value] of Object.entries((schema.properties ?? {}) as Record<string, Record<string, unknown>>)) {
        if (/path$/i.test(key)) found.push(`${channel} ${prefix}${key}`);
        walk(value, `${prefix}${key}.`, channel);
      }
      for (const branch of [...((schema.anyOf ?? []) as Record<string, unknown>[]), ...((schema.oneOf ?? []) as Record<string, unknown>[])]) walk(branch, prefix, channel);
      if (schema.items && typeof schema.items === 'object') walk(schema.items as Record<string, unknown>, `${prefix}[].`, channel);
    };
    for (const channel of channels) walk(z.toJSONSchema(payloadSchemas[channel], { unrepresentable: 'any', io: 'input' }) as Record<string, unknown>, '', channel);
    // (an uploaded folder's files[].path is a name inside the upload, written under the session folder,
    // never a file on disk: its schema refuses "..", drives and absolute paths; test/unit/api/imageFolders)
    assert.deepEqual(found.sort(), ['datasets:open source.files.[].path', 'datasets:open source.labelsPath', 'datasets:open source.path', 'models:import source.path', 'models:predictFile path', 'models:save path', 'projects:open path', 'projects:save path']);
  });
});

describe('paths come only from dialogs', () => {
  test('datasets:open, models:import, models:save and models:predictFile refuse a path no dialog gave', async () => {
    const api = recordingApi();
    const router = createIpcRouter(api, fakeDialogs([]).dialogs);
    const open = await router.handle(page, 'datasets:open', { source: { kind: 'path', path: '/etc/passwd' } });
    assert.equal(open.error?.field, 'source.path');
    assert.match(open.error?.message ?? '', /must come from a file dialog/);
    const imported = await router.handle(page, 'models:import', { source: { kind: 'path', path: '/tmp/x.safetensors' } });
    assert.equal(imported.error?.field, 'source.path');
    const saved = await router.handle(page, 'models:save', { modelId: 'model-1', path: '/home/user/.bashrc' });
    assert.equal(saved.error?.field, 'path');
    const predicted = await router.handle(page, 'models:predictFile', { modelId: 'model-1', datasetId: 'dataset-1', path: '/home/user/.profile' });
    assert.equal(predicted.error?.field, 'path');
    assert.match(predicted.error?.message ?? '', /must come from a file dialog/);
    assert.equal(api.calls.length, 0);
    // without a path there is nothing to check: the call goes on
    await router.handle(page, 'models:predictFile', { modelId: 'model-1', datasetId: 'dataset-1' });
    assert.equal(api.calls.length, 1);
  });

  test('projects: a path needs a dialog unless it is a recent project; a bare name goes to the projects folder', async () => {
    const recent = path.resolve('/home/user/work/study.nnstudio');
    const calls: string[] = [];
    const api = {
      dispatch: async (channel: string) => {
        calls.push(channel);
        return channel === 'projects:info' ? { result: { recent: [recent], folder: '/x' } } : { result: 'ok' };
      },
    };
    const router = createIpcRouter(api, fakeDialogs([]).dialogs);
    const saved = await router.handle(page, 'projects:save', { path: '/home/user/.bashrc' });
    assert.equal(saved.error?.field, 'path');
    assert.match(saved.error?.message ?? '', /must come from a file dialog/);
    const opened = await router.handle(page, 'projects:open', { path: '/etc/passwd' });
    assert.equal(opened.error?.field, 'path');
    assert.deepEqual(calls.filter((channel) => channel !== 'projects:info'), [], 'nothing reached the session');
    resultOf(await router.handle(page, 'projects:open', { path: recent }));
    resultOf(await router.handle(page, 'projects:save', { path: 'my study' }));
    resultOf(await router.handle(page, 'projects:save', {}));
    assert.deepEqual(calls.filter((channel) => channel !== 'projects:info'), ['projects:open', 'projects:save', 'projects:save']);
  });

  test('uploads and MNIST need no dialog', async () => {
    const api = recordingApi();
    const router = createIpcRouter(api, fakeDialogs([]).dialogs);
    resultOf(await router.handle(page, 'datasets:open', { source: { kind: 'mnist', split: 'test', limit: 10 } }));
    resultOf(await router.handle(page, 'models:import', { source: { kind: 'upload', fileName: 'm.safetensors', base64: '' } }));
    assert.equal(api.calls.length, 2);
  });

  test('a file chosen in the open dialog may be opened, with its head for the column choice', async () => {
    const api = createApi();
    try {
      const { asked, dialogs } = fakeDialogs([irisCsv]);
      const router = createIpcRouter(api, dialogs);
      const chosen = resultOf(await router.handle(page, 'dialog:openFile', { purpose: 'dataset' })) as ChosenFile;
      assert.deepEqual(asked, [{ kind: 'open', arg: 'dataset' }]);
      assert.equal(chosen.path, path.resolve(irisCsv));
      assert.equal(chosen.name, 'iris.csv');
      assert.equal(chosen.head, fs.readFileSync(irisCsv, 'utf8').slice(0, chosen.head?.length));
      assert.ok(router.wasChosen(irisCsv));
      const info = resultOf(await router.handle(page, 'datasets:open', { source: { kind: 'path', path: chosen.path, csv: { labelColumn: 'species' } } })) as DatasetInfo;
      assert.equal(info.name, 'iris.csv');
      assert.equal(info.count, 150);
      // The labels file of an IDX pair must have been chosen too.
      const labels = await router.handle(page, 'datasets:open', { source: { kind: 'path', path: chosen.path, labelsPath: '/etc/hosts' } });
      assert.equal(labels.error?.field, 'source.labelsPath');
    } finally {
      await api.close();
    }
  });

  test('a chosen dataset in UTF-16 comes as text; a workbook comes with what it is instead of a head', async () => {
    const unicode = path.join(scratch, 'unicode.txt');
    fs.writeFileSync(unicode, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('a\tb\tlabel\r\n1\t2\tx\r\n', 'utf16le')]));
    const workbook = path.join(scratch, 'book.csv');
    fs.writeFileSync(workbook, Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00]));
    const router = createIpcRouter(recordingApi(), fakeDialogs([unicode, workbook]).dialogs);
    const text = resultOf(await router.handle(page, 'dialog:openFile', { purpose: 'dataset' })) as ChosenFile;
    assert.equal(text.head, 'a\tb\tlabel\r\n1\t2\tx\r\n', 'decoded, without its byte order mark');
    assert.equal(text.headProblem, undefined);
    const zip = resultOf(await router.handle(page, 'dialog:openFile', { purpose: 'dataset' })) as ChosenFile;
    assert.equal(zip.head, undefined);
    assert.match(zip.headProblem ?? '', /^the file is a ZIP archive, such as an Excel \(\.xlsx\)/);
  });

  test('a chosen gzip file (.csv.gz) comes as its decompressed text; a damaged one with what is wrong', async () => {
    const compressed = path.join(scratch, 'digits.csv.gz');
    fs.writeFileSync(compressed, zlib.gzipSync('a,b,label\n1,2,x\n'));
    const damaged = path.join(scratch, 'damaged.csv.gz');
    fs.writeFileSync(damaged, zlib.gzipSync('a,b,label\n1,2,x\n').subarray(0, 12));
    const router = createIpcRouter(recordingApi(), fakeDialogs([compressed, damaged]).dialogs);
    const text = resultOf(await router.handle(page, 'dialog:openFile', { purpose: 'dataset' })) as ChosenFile;
    assert.deepEqual([text.head, text.headProblem], ['a,b,label\n1,2,x\n', undefined]);
    const cut = resultOf(await router.handle(page, 'dialog:openFile', { purpose: 'dataset' })) as ChosenFile;
    assert.equal(cut.head, undefined);
    assert.match(cut.headProblem ?? '', /^is not a valid gzip file \(unexpected end of file\)/);
  });

  test('a model file chosen to import has no head; a cancelled dialog answers null and allows nothing', async () => {
    const modelFile = path.join(scratch, 'chosen.safetensors');
    fs.writeFileSync(modelFile, 'not really a model');
    const api = recordingApi();
    const router = createIpcRouter(api, fakeDialogs([undefined, modelFile]).dialogs);
    assert.deepEqual(await router.handle(page, 'dialog:openFile', { purpose: 'model' }), { result: null });
    const chosen = resultOf(await router.handle(page, 'dialog:openFile', { purpose: 'model' })) as ChosenFile;
    assert.equal(chosen.head, undefined);
    resultOf(await router.handle(page, 'models:import', { source: { kind: 'path', path: modelFile } }));
    assert.deepEqual(api.calls, [{ channel: 'models:import', payload: { source: { kind: 'path', path: modelFile } } }]);
  });

  test('models:save writes only where the save dialog said, and the suggested name is made safe', async () => {
    const target = path.join(scratch, 'out', 'iris.safetensors');
    const api = recordingApi();
    const { asked, dialogs } = fakeDialogs([undefined, target]);
    const router = createIpcRouter(api, dialogs);
    assert.deepEqual(await router.handle(page, 'dialog:saveFile', { purpose: 'model', defaultName: 'a/b: iris.csv (run-1)' }), { result: null });
    assert.deepEqual(asked[0], { kind: 'save', arg: 'a_b_ iris.csv (run-1).safetensors' });
    assert.deepEqual(await router.handle(page, 'dialog:saveFile', { purpose: 'model', defaultName: 'iris' }), { result: { path: target } });
    resultOf(await router.handle(page, 'models:save', { modelId: 'model-1', path: target }));
    // The same folder is not enough: the exact file.
    const sibling = await router.handle(page, 'models:save', { modelId: 'model-1', path: path.join(scratch, 'out', 'other.safetensors') });
    assert.equal(sibling.error?.field, 'path');
    assert.equal(api.calls.length, 1);
  });

  test('the ONNX export goes through the save dialog too: .onnx suggested, models:save with format onnx at that path', async () => {
    const target = path.join(scratch, 'out', 'iris.onnx');
    const api = recordingApi();
    const { asked, dialogs } = fakeDialogs([target]);
    const router = createIpcRouter(api, dialogs);
    assert.deepEqual(await router.handle(page, 'dialog:saveFile', { purpose: 'onnx', defaultName: 'iris.safetensors' }), { result: { path: target } });
    assert.deepEqual(asked[0], { kind: 'save', arg: 'iris.onnx' });
    resultOf(await router.handle(page, 'models:save', { modelId: 'model-1', path: target, format: 'onnx' }));
    assert.deepEqual(api.calls, [{ channel: 'models:save', payload: { modelId: 'model-1', path: target, format: 'onnx' } }]);
    const elsewhere = await router.handle(page, 'models:save', { modelId: 'model-1', path: path.join(scratch, 'x.onnx'), format: 'onnx' });
    assert.equal(elsewhere.error?.field, 'path');
    const badPurpose = await router.handle(page, 'dialog:saveFile', { purpose: 'pmml', defaultName: 'iris' });
    assert.equal(badPurpose.error?.field, 'purpose');
  });

  test('a failing dialog is an error value, not a rejection', async () => {
    const router = createIpcRouter(recordingApi(), {
      openFile: async () => {
        throw new Error('no display');
      },
      saveFile: async () => undefined,
    });
    assert.deepEqual(await router.handle(page, 'dialog:openFile', { purpose: 'dataset' }), { error: { message: 'no display' } });
  });
});

describe('registerIpc', () => {
  test('handles the invoke channel with the sender frame, forwards events to open windows, and undoes both', async () => {
    const handlers = new Map<string, (event: unknown, ...args: unknown[]) => unknown>();
    const ipcMain = {
      handle: (channel: string, listener: (event: never, ...args: unknown[]) => unknown) => void handlers.set(channel, listener as never),
      removeHandler: (channel: string) => void handlers.delete(channel),
    };
    const listeners = new Set<(event: ApiEvent) => void>();
    const api = {
      ...recordingApi(),
      subscribe: (listener: (event: ApiEvent) => void) => {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    };
    const sent: unknown[][] = [];
    const open = { webContents: { isDestroyed: () => false, send: (...args: unknown[]) => void sent.push(args) } };
    const destroyed = { webContents: { isDestroyed: () => true, send: () => assert.fail('sent to a destroyed window') } };
    const dispose = registerIpc({ ipcMain: ipcMain as never, api, dialogs: fakeDialogs([]).dialogs, windows: () => [open, destroyed] });

    const handler = handlers.get(ipcChannels.invoke);
    assert.ok(handler, 'nnstudio:invoke is handled');
    assert.deepEqual([...handlers.keys()], ['nnstudio:invoke']);
    const fromPage = { senderFrame: { url: 'app://nnstudio/index.html', parent: null } };
    assert.deepEqual(await handler(fromPage, 'devices:list', {}), { result: 'devices:list' });
    const fromIframe = { senderFrame: { url: 'app://nnstudio/index.html', parent: {} } };
    assert.ok(((await handler(fromIframe, 'devices:list', {})) as ApiResponse<unknown>).error);
    assert.ok(((await handler({ senderFrame: null }, 'devices:list', {})) as ApiResponse<unknown>).error);

    const event: ApiEvent = { event: 'training:done', payload: { runId: 'run-1', status: 'completed', message: '', history: [] } };
    for (const listener of listeners) listener(event);
    assert.deepEqual(sent, [[ipcChannels.event, event]]);

    dispose();
    assert.equal(handlers.size, 0);
    assert.equal(listeners.size, 0);
  });
});

describe('ipc.ts and security.ts load without Electron', () => {
  test('their compiled files require no electron at run time', () => {
    for (const file of ['ipc.js', 'security.js']) {
      const source = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'app', 'electron', file), 'utf8');
      assert.doesNotMatch(source, /require\("electron"\)/, file);
    }
  });
});
