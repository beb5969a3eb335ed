// Another client of a running `nnstudio serve` session, as a script would be: the UI API over its WebSocket,
// authenticated with the token of the URL serve printed (Authorization: Bearer, no cookie, no Origin).
import WebSocket from 'ws';
import type { Channel, PayloadOf, ResultOf } from '../../../app/api/types';

export interface ApiClient {
  /** The channel's result; an error answer rejects with its message. */
  call<C extends Channel>(channel: C, payload: PayloadOf<C>): Promise<ResultOf<C>>;
  close(): void;
}

export async function connectApi(browserUrl: string): Promise<ApiClient> {
  const url = new URL(browserUrl);
  const token = url.searchParams.get('token') ?? '';
  const socket = new WebSocket(`ws://${url.host}/api`, { headers: { Authorization: `Bearer ${token}` } });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  socket.on('message', (data) => {
    const message = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: { message: string } };
    const call = typeof message.id === 'number' ? waiting.get(message.id) : undefined;
    if (!call || message.id === undefined) return;
    waiting.delete(message.id);
    if (message.error) call.reject(new Error(message.error.message));
    else call.resolve(message.result);
  });
  let nextId = 1;
  return {
    call(channel, payload) {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
        socket.send(JSON.stringify({ id, channel, payload }));
      });
    },
    close: () => socket.close(),
  };
}
