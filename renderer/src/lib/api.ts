// The renderer's one door to NN Studio: the UI API of app/api/types.ts. In Electron the preload exposes
// it as `window.nnstudio` (IPC to the main process); under `nnstudio serve` it is a WebSocket to /api on
// the page's own origin.
import type {
  ApiError,
  ApiEvent,
  ApiResponse,
  Channel,
  NnStudioApi,
  NnStudioDesktopApi,
  PayloadOf,
  ResultOf,
  ServerMessage,
} from '../../../app/api/types';

declare global {
  interface Window {
    /** Set by Electron's preload (app/electron/preload.ts); absent in a browser. */
    nnstudio?: NnStudioDesktopApi;
  }
}

export type { NnStudioApi } from '../../../app/api/types';

export type ConnectionState = 'connecting' | 'open' | 'closed';

export interface StudioClient extends NnStudioApi {
  /** The transport's state (WebSocket only; Electron's IPC is always there); returns the unsubscriber. */
  onConnection?(listener: (state: ConnectionState) => void): () => void;
}

interface Pending {
  resolve: (response: ApiResponse<unknown>) => void;
}

/** The token the page was opened with (`?token=`); later loads rely on the HttpOnly cookie the server set. */
function takeTokenFromUrl(): string | undefined {
  const url = new URL(window.location.href);
  const token = url.searchParams.get('token') ?? undefined;
  if (token !== undefined) {
    // Keep the token out of the address bar (screenshots, shared links); the cookie carries it from here.
    url.searchParams.delete('token');
    window.history.replaceState(null, '', url.pathname + url.search + url.hash);
  }
  return token;
}

function apiUrl(token: string | undefined): string {
  const url = new URL('api', window.location.href);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  url.search = token ? `?token=${encodeURIComponent(token)}` : '';
  url.hash = '';
  return url.toString();
}

/** Replies resolve by id; events go to every listener; calls made while reconnecting wait for the socket. */
export function createWebSocketClient(token = takeTokenFromUrl()): StudioClient {
  const pending = new Map<number, Pending>();
  const eventListeners = new Set<(event: ApiEvent) => void>();
  const connectionListeners = new Set<(state: ConnectionState) => void>();
  let socket: WebSocket | undefined;
  let state: ConnectionState = 'connecting';
  let nextId = 1;
  let retryMs = 500;
  const queued: string[] = [];

  const setState = (next: ConnectionState): void => {
    state = next;
    for (const listener of connectionListeners) listener(next);
  };

  const fail = (error: ApiError): void => {
    for (const [id, call] of pending) {
      pending.delete(id);
      call.resolve({ error });
    }
  };

  function connect(): void {
    setState('connecting');
    const ws = new WebSocket(apiUrl(token));
    socket = ws;
    ws.onopen = () => {
      retryMs = 500;
      setState('open');
      for (const message of queued.splice(0)) ws.send(message);
    };
    ws.onmessage = (message) => {
      let parsed: ServerMessage;
      try {
        parsed = JSON.parse(String(message.data)) as ServerMessage;
      } catch {
        return;
      }
      if ('event' in parsed) {
        for (const listener of eventListeners) listener(parsed);
        return;
      }
      const call = typeof parsed.id === 'number' ? pending.get(parsed.id) : undefined;
      if (!call || typeof parsed.id !== 'number') return;
      pending.delete(parsed.id);
      call.resolve(parsed.error ? { error: parsed.error } : { result: parsed.result });
    };
    ws.onclose = (closed) => {
      if (socket !== ws) return;
      setState('closed');
      // 1009: the server's message limit (app/server maxMessageBytes) closed the socket before reading on.
      fail({
        message:
          closed.code === 1009
            ? 'the request was too large for NN Studio\'s server (at most 260 MiB per message: a file of about 190 MiB); reconnecting…'
            : 'the connection to NN Studio was lost; reconnecting…',
      });
      setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, 8000);
    };
  }
  connect();

  return {
    invoke<C extends Channel>(channel: C, payload: PayloadOf<C>): Promise<ApiResponse<ResultOf<C>>> {
      const id = nextId++;
      const message = JSON.stringify({ id, channel, payload });
      return new Promise((resolve) => {
        pending.set(id, { resolve: resolve as Pending['resolve'] });
        if (socket && socket.readyState === WebSocket.OPEN) socket.send(message);
        else queued.push(message);
      });
    },
    onEvent(listener) {
      eventListeners.add(listener);
      return () => eventListeners.delete(listener);
    },
    onConnection(listener) {
      connectionListeners.add(listener);
      listener(state);
      return () => connectionListeners.delete(listener);
    },
  };
}

/** The desktop app's API with its native dialogs, or undefined in a browser. */
export const desktop: NnStudioDesktopApi | undefined = window.nnstudio;

/** The client every screen uses. */
export const api: StudioClient = desktop ?? createWebSocketClient();
