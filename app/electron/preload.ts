// The page's one door to the main process: `window.nnstudio`, exactly the NnStudioDesktopApi of
// app/api/types.ts (invoke, onEvent, dialogs) and nothing of Node or Electron. The window is sandboxed,
// so this file may require 'electron' alone: every other import here is type-only (a unit test checks
// the compiled file).
import { contextBridge, ipcRenderer, type IpcRendererEvent } from 'electron';
import type { ApiEvent, ApiResponse, NnStudioDesktopApi } from '../api/types';
import type { ipcChannels } from './ipc';

// Literals, not imports (a sandboxed preload cannot require our modules); the types keep them in step.
const invokeChannel: (typeof ipcChannels)['invoke'] = 'nnstudio:invoke';
const eventChannel: (typeof ipcChannels)['event'] = 'nnstudio:event';

/** Errors stay values even if the main process has no handler (yet) or it failed. */
function call(channel: string, payload: unknown): Promise<ApiResponse<never>> {
  return ipcRenderer.invoke(invokeChannel, channel, payload).catch((error: unknown) => ({
    error: { message: `NN Studio's main process did not answer: ${error instanceof Error ? error.message : String(error)}` },
  }));
}

const nnstudio: NnStudioDesktopApi = {
  invoke: (channel, payload) => call(channel, payload),
  onEvent(listener) {
    // The page gets the API event alone, never Electron's event object (it carries the sender).
    const forward = (_event: IpcRendererEvent, apiEvent: ApiEvent): void => listener(apiEvent);
    ipcRenderer.on(eventChannel, forward);
    return () => {
      ipcRenderer.removeListener(eventChannel, forward);
    };
  },
  dialogs: {
    openFile: (request) => call('dialog:openFile', request),
    saveFile: (request) => call('dialog:saveFile', request),
  },
};

contextBridge.exposeInMainWorld('nnstudio', nnstudio);
