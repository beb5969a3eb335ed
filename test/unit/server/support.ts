// Raw HTTP requests and WebSocket handshakes against a RunningServer, with every header under the test's
// control (Host, Origin, Cookie, Authorization, a body), so the server's checks see exactly what is sent.
import * as http from 'node:http';
import WebSocket from 'ws';
import type { RunningServer } from '../../../app/server';
import { within } from '../api/helpers';

export interface HttpReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface RawRequest {
  method?: string;
  headers?: Record<string, string>;
  /** Sent as is; with `chunked`, as Transfer-Encoding: chunked. */
  body?: string;
  chunked?: boolean;
  /** false: send no Host header at all. */
  setHost?: boolean;
}

/** One request on a fresh connection (no URL normalisation, unlike fetch). */
export function request(server: RunningServer, requestPath: string, options: RawRequest = {}): Promise<HttpReply> {
  const headers = { ...options.headers };
  if (options.body !== undefined && !options.chunked) headers['Content-Length'] = String(Buffer.byteLength(options.body));
  return within(
    new Promise((resolve, reject) => {
      const outgoing = http.request(
        { host: server.host, port: server.port, path: requestPath, method: options.method ?? 'GET', headers, setHost: options.setHost ?? true, agent: false },
        (response) => {
          let body = '';
          response.setEncoding('utf8');
          response.on('data', (chunk) => (body += chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
        },
      );
      outgoing.on('error', reject);
      if (options.body !== undefined) outgoing.write(options.body);
      outgoing.end();
    }),
    5000,
    `${options.method ?? 'GET'} ${requestPath}`,
  );
}

/** The handshake's outcome: 101 when the socket opened (then closed at once), else the refusal's status. */
export function handshake(server: RunningServer, query: string, options: { headers?: Record<string, string>; origin?: string; path?: string } = {}): Promise<number> {
  const socket = new WebSocket(`ws://${server.host}:${server.port}${options.path ?? '/api'}${query}`, { headers: options.headers, origin: options.origin });
  return within(
    new Promise<number>((resolve) => {
      socket.once('unexpected-response', (_request, response) => {
        resolve(response.statusCode ?? 0);
        response.resume();
      });
      socket.once('open', () => resolve(101));
      socket.once('error', () => resolve(-1));
    }),
    5000,
    'the handshake',
  ).finally(() => socket.terminate());
}

/** `?token=…` for the server's token. */
export const tokenQuery = (server: RunningServer): string => `?token=${encodeURIComponent(server.token)}`;

/** `token` with its last character changed: same length, wrong. */
export function sameLengthWrong(token: string): string {
  const last = token.at(-1) === 'A' ? 'B' : 'A';
  return token.slice(0, -1) + last;
}
