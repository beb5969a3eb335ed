// `serve`: the UI in a browser. One HTTP server gives the built renderer's static files and one WebSocket
// (/api) carries the UI API: { id, channel, payload } in, { id, result } / { id, error } and pushed events
// out. Every request needs the session's token: `?token=` once (the server then sets an HttpOnly cookie
// for the page's own requests), the cookie, or `Authorization: Bearer <token>`.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import { z } from 'zod';
import { createApi, type Api } from '../api/session';
import type { ServerMessage } from '../api/types';
import { contentTypeFor } from '../core/files/contentTypes';

export interface ServerOptions {
  /** Default 127.0.0.1: only this machine can connect. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
  /** Default: 32 random bytes, base64url. */
  token?: string;
  /** The built renderer; without it every path but the WebSocket is 404. */
  staticDir?: string;
  /** Default: a new session (closed with the server). */
  api?: Api;
}

export interface RunningServer {
  /** http://host:port/ */
  url: string;
  /** The URL to open in a browser: url with ?token=. */
  browserUrl: string;
  /** ws://host:port/api */
  webSocketUrl: string;
  token: string;
  host: string;
  port: number;
  close(): Promise<void>;
}

export const apiPath = '/api';
export const tokenCookie = 'nnstudio_token';
/** One message may carry an upload (base64); the API limits uploads to 256 MiB of base64. */
const maxMessageBytes = 260 * 1024 * 1024;

/** No inline script or style, nothing from elsewhere; images may be data: or blob: URLs (the digit canvas). */
export const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const securityHeaders: Record<string, string> = {
  'Content-Security-Policy': contentSecurityPolicy,
  'X-Content-Type-Options': 'nosniff',
  // The token is in the first URL: never send it on.
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};

const clientMessageSchema = z.strictObject({
  id: z.union([z.string().max(100), z.number().int()]),
  channel: z.string().max(100),
  payload: z.unknown().optional(),
});

// ---- the token ----

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Constant-time: compares digests, so neither length nor content leaks through timing. */
function tokenMatches(given: string | undefined, expected: Buffer): boolean {
  return given !== undefined && timingSafeEqual(digest(given), expected);
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return decodeURIComponent(part.slice(at + 1).trim());
  }
  return undefined;
}

/** Which way the request carried a valid token, if any. */
function authenticate(request: http.IncomingMessage, url: URL, expected: Buffer): 'query' | 'cookie' | 'header' | undefined {
  if (tokenMatches(url.searchParams.get('token') ?? undefined, expected)) return 'query';
  if (tokenMatches(cookieValue(request.headers.cookie, tokenCookie), expected)) return 'cookie';
  const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
  if (tokenMatches(bearer, expected)) return 'header';
  return undefined;
}

/** A browser page from another site may open a WebSocket here; only our own origin may. */
function sameOrigin(request: http.IncomingMessage): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return true; // not a browser (CLI clients, tests)
  try {
    return new URL(origin).host === request.headers.host;
  } catch {
    return false;
  }
}

// ---- static files ----

/** The file under `root` that `pathname` names, or undefined for anything outside it or missing. */
async function resolveStatic(root: string, pathname: string): Promise<string | undefined> {
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return undefined;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return undefined;
  const candidate = path.resolve(root, '.' + path.posix.normalize('/' + decoded));
  try {
    // realpath: a symlink inside the folder must not lead out of it either.
    let real = await fs.promises.realpath(candidate);
    if (real !== root && !real.startsWith(root + path.sep)) return undefined;
    if ((await fs.promises.stat(real)).isDirectory()) real = path.join(real, 'index.html');
    const stat = await fs.promises.stat(real);
    return stat.isFile() ? real : undefined;
  } catch {
    return undefined;
  }
}

function sendText(response: http.ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  response.writeHead(status, { ...securityHeaders, 'Content-Type': 'text/plain; charset=utf-8', ...headers });
  response.end(text);
}

// ---- the server ----

export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1';
  const token = options.token ?? randomBytes(32).toString('base64url');
  if (token.length < 16) throw new Error('the server token must have at least 16 characters');
  const expected = digest(token);
  const staticRoot = options.staticDir ? await fs.promises.realpath(path.resolve(options.staticDir)) : undefined;
  const api = options.api ?? createApi();
  const ownsApi = options.api === undefined;

  async function serveStatic(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const how = authenticate(request, url, expected);
    if (!how) return sendText(response, 401, 'unauthorized: open the URL that `nnstudio serve` printed (it carries the token)\n');
    if (request.method !== 'GET' && request.method !== 'HEAD') return sendText(response, 405, 'method not allowed\n', { Allow: 'GET, HEAD' });
    const cookie: Record<string, string> =
      how === 'query' ? { 'Set-Cookie': `${tokenCookie}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/` } : {};
    const file = staticRoot && (await resolveStatic(staticRoot, url.pathname));
    if (!file) return sendText(response, 404, 'not found\n', cookie);
    const type = contentTypeFor(file);
    const stat = await fs.promises.stat(file);
    response.writeHead(200, { ...securityHeaders, ...cookie, 'Content-Type': type, 'Content-Length': String(stat.size) });
    if (request.method === 'HEAD') return void response.end();
    fs.createReadStream(file).on('error', () => response.destroy()).pipe(response);
  }

  const server = http.createServer((request, response) => {
    serveStatic(request, response).catch(() => {
      if (!response.headersSent) sendText(response, 500, 'internal error\n');
      else response.destroy();
    });
  });

  const sockets = new WebSocketServer({ noServer: true, maxPayload: maxMessageBytes });
  server.on('upgrade', (request, socket, head) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const refuse = (status: string) => {
      socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      socket.destroy();
    };
    if (url.pathname !== apiPath) return refuse('404 Not Found');
    if (!authenticate(request, url, expected)) return refuse('401 Unauthorized');
    if (!sameOrigin(request)) return refuse('403 Forbidden');
    sockets.handleUpgrade(request, socket, head, (client) => sockets.emit('connection', client, request));
  });

  sockets.on('connection', (client: WebSocket) => {
    const send = (message: ServerMessage): void => {
      if (client.readyState === client.OPEN) client.send(JSON.stringify(message));
    };
    const unsubscribe = api.subscribe(send);
    client.on('close', unsubscribe);
    client.on('error', () => client.terminate());
    client.on('message', (data, isBinary) => {
      let message: unknown;
      try {
        if (isBinary) throw new Error('binary');
        message = JSON.parse(data.toString());
      } catch {
        return send({ id: null, error: { message: 'a message must be JSON text: { "id", "channel", "payload" }' } });
      }
      const parsed = clientMessageSchema.safeParse(message);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const field = [...issue.path.map(String), ...(issue.code === 'unrecognized_keys' ? issue.keys.slice(0, 1) : [])].join('.');
        const rawId = (message as { id?: unknown } | null)?.id;
        const id = typeof rawId === 'string' || typeof rawId === 'number' ? rawId : null;
        return send({ id, error: { message: `invalid message: ${field || 'message'}: ${issue.message}`, field: field || undefined } });
      }
      const { id, channel, payload } = parsed.data;
      void api.dispatch(channel, payload).then((response) => send({ id, ...response } as ServerMessage));
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const urlHost = address.address.includes(':') ? `[${address.address}]` : address.address;
  const url = `http://${urlHost}:${address.port}/`;

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      for (const client of sockets.clients) client.terminate();
      await new Promise<void>((resolve) => sockets.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (ownsApi) await api.close();
    })());

  return {
    url,
    browserUrl: `${url}?token=${encodeURIComponent(token)}`,
    webSocketUrl: `ws://${urlHost}:${address.port}${apiPath}`,
    token,
    host: address.address,
    port: address.port,
    close,
  };
}
