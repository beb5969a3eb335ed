// `serve`: the UI in a browser. One HTTP server gives the built renderer's static files and one WebSocket
// (/api) carries the UI API: { id, channel, payload } in, { id, result } / { id, error } and pushed events
// out.
//
// Who may talk to it (guards.ts holds the checks):
// - Every HTTP request and every WebSocket handshake must name us in its Host header (a loopback name or
//   the bound address, with our port, or an `allowHosts` entry: else 421), must not come from another
//   origin (an `Origin` header, when there is one, must be this server: else 403), and must carry the
//   session's token: `?token=` once (the server then sets an HttpOnly, SameSite=Strict cookie for the
//   page's own requests), the cookie, or `Authorization: Bearer <token>` (else 401).
// - A WebSocket message carries no token of its own: the socket is authenticated once, at the handshake,
//   and a message is only ever read from a socket that passed it (ws never hands us unauthenticated
//   sockets: the upgrade is refused before `handleUpgrade`). A browser cannot take over an open socket.
// - Limits: a message is at most `maxMessageBytes` (ws closes the socket with 1009 beyond it, before
//   buffering more), at most `maxInFlightPerSocket` requests wait for a reply per socket, and no HTTP
//   request may have a body (413): the static files are GET/HEAD only.
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { z } from 'zod';
import { createApi, type Api } from '../api/session';
import type { ServerMessage } from '../api/types';
import { contentTypeFor } from '../core/files/contentTypes';
import { errorText, stderrLogger, type Logger } from '../core/log';
import { allowedHosts, authenticate, digest, hostAllowed, originAllowed, type AllowedHosts } from './guards';

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
  /**
   * More Host header values to answer besides loopback names and the bound address: "name" (with our
   * port) or "name:port" (e.g. a tunnel on another local port, "localhost:9000").
   */
  allowHosts?: string[];
  /** Default `maxMessageBytes`: the largest WebSocket message accepted. */
  maxMessageBytes?: number;
  /** Where failures go (a static file that could not be sent; the session's own, when the server makes it); default stderr. */
  logger?: Logger;
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
  /** The cookie the server sets for the page's own requests: `nnstudio_token_<port>`. */
  cookieName: string;
  close(): Promise<void>;
}

export const apiPath = '/api';
/** Cookies are per host, not per port: the port in the name keeps two servers on one machine apart. */
export const tokenCookieName = (port: number): string => `nnstudio_token_${port}`;
/** One message may carry an upload (base64); the API limits uploads to 256 MiB of base64. */
export const maxMessageBytes = 260 * 1024 * 1024;
/** Requests on one socket waiting for their reply; the renderer has a few at a time. */
export const maxInFlightPerSocket = 32;

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

export const securityHeaders: Readonly<Record<string, string>> = Object.freeze({
  'Content-Security-Policy': contentSecurityPolicy,
  'X-Content-Type-Options': 'nosniff',
  // Old browsers that ignore frame-ancestors.
  'X-Frame-Options': 'DENY',
  // The token is in the first URL: never send it on.
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Cache-Control': 'no-store',
});

const clientMessageSchema = z.strictObject({
  id: z.union([z.string().max(100), z.number().int()]),
  channel: z.string().max(100),
  payload: z.unknown().optional(),
});

// ---- static files ----

/** What a path that names nothing servable gives: a missing file, a part that is a file, a loop, a name too long. */
const notServable = new Set(['ENOENT', 'ENOTDIR', 'ELOOP', 'ENAMETOOLONG']);

/**
 * The file under `root` that `pathname` names, or undefined for anything outside it or missing. Other
 * failures (EACCES, EIO) are thrown: they are the server's problem, answered 500 and logged.
 */
async function resolveStatic(root: string, pathname: string): Promise<string | undefined> {
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return undefined; // a malformed %-escape names no file
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
  } catch (error) {
    if (notServable.has((error as NodeJS.ErrnoException).code ?? '')) return undefined;
    throw error;
  }
}

function sendText(response: http.ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  response.writeHead(status, { ...securityHeaders, 'Content-Type': 'text/plain; charset=utf-8', ...headers });
  response.end(text);
}

// ---- who may ask ----

interface Refusal {
  status: number;
  reason: string;
  text: string;
}

const statusReasons: Record<number, string> = {
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  413: 'Content Too Large',
  421: 'Misdirected Request',
  426: 'Upgrade Required',
};

function refusal(status: number, text: string): Refusal {
  return { status, reason: statusReasons[status] ?? 'Error', text };
}

/** A body on a request to a GET/HEAD-only server: refused unread. */
function hasBody(request: http.IncomingMessage): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** Host, Origin, body and token, in that order: the first check a request fails, or undefined. */
function checkRequest(request: http.IncomingMessage, url: URL, gate: Site['gate']): Refusal | undefined {
  if (!hostAllowed(request.headers.host, gate.allowed, gate.port)) {
    const names = [...gate.allowed.names].map((name) => `${name}:${gate.port}`).concat([...gate.allowed.withPort]);
    return refusal(421, `misdirected request: this server answers to ${names.join(', ')} only (serve --allow-host adds a name)\n`);
  }
  if (!originAllowed(request.headers.origin, request.headers.host)) return refusal(403, 'forbidden: a page of another origin may not use this server\n');
  if (hasBody(request)) return refusal(413, 'request bodies are not accepted: the UI API goes over the WebSocket\n');
  if (!authenticate(request, url, gate.expected, gate.cookieName)) {
    return refusal(401, 'unauthorized: open the URL that `nnstudio serve` printed (it carries the token)\n');
  }
  return undefined;
}

// ---- the server ----

/** What answering a request needs: who may ask (the gate), where the files are, the token to set as a cookie. */
interface Site {
  gate: { allowed: AllowedHosts; port: number; expected: Buffer; cookieName: string };
  staticRoot: string | undefined;
  token: string;
  logger: Logger;
}

/** The request's path without its query (which may carry the token), for the log. */
function pathOf(request: http.IncomingMessage): string {
  return (request.url ?? '/').split('?')[0];
}

async function serveStatic(site: Site, request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const refused = checkRequest(request, url, site.gate);
  // Connection: close, so that an unread body is not read through to the next request.
  if (refused) return sendText(response, refused.status, refused.text, { Connection: 'close' });
  if (request.method !== 'GET' && request.method !== 'HEAD') return sendText(response, 405, 'method not allowed\n', { Allow: 'GET, HEAD' });
  const cookie: Record<string, string> =
    url.searchParams.has('token') ? { 'Set-Cookie': `${site.gate.cookieName}=${encodeURIComponent(site.token)}; HttpOnly; SameSite=Strict; Path=/` } : {};
  if (url.pathname === apiPath) return sendText(response, 426, 'the UI API is a WebSocket\n', { ...cookie, Upgrade: 'websocket' });
  const file = site.staticRoot && (await resolveStatic(site.staticRoot, url.pathname));
  if (!file) return sendText(response, 404, 'not found\n', cookie);
  const type = contentTypeFor(file);
  const stat = await fs.promises.stat(file);
  response.writeHead(200, { ...securityHeaders, ...cookie, 'Content-Type': type, 'Content-Length': String(stat.size) });
  if (request.method === 'HEAD') return void response.end();
  fs.createReadStream(file)
    .on('error', (error) => {
      site.logger.error(`serve: reading ${file} for ${request.method} ${pathOf(request)}`, error);
      response.destroy();
    })
    .pipe(response);
}

/** Static files; a failure is logged with the request's path and answered 500 (or the connection cut once the answer began). */
function httpHandler(site: Site): http.RequestListener {
  return (request, response) => {
    serveStatic(site, request, response).catch((error: unknown) => {
      site.logger.error(`serve: answering ${request.method} ${pathOf(request)}`, error);
      if (!response.headersSent) sendText(response, 500, 'internal error\n');
      else response.destroy();
    });
  };
}

/** The WebSocket handshake on /api, behind the same checks as every HTTP request. */
function upgradeHandler(site: Site, sockets: WebSocketServer) {
  return (request: http.IncomingMessage, socket: Duplex, head: Buffer): void => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const refuse = ({ status, reason, text }: Refusal) => {
      socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
      socket.destroy();
    };
    const refused = checkRequest(request, url, site.gate);
    if (refused) return refuse(refused);
    if (url.pathname !== apiPath) return refuse(refusal(404, 'not found\n'));
    sockets.handleUpgrade(request, socket, head, (client) => sockets.emit('connection', client, request));
  };
}

/** A client message as { id, channel, payload }, or the error value its reply carries. */
function parseClientMessage(data: RawData, isBinary: boolean): { id: string | number; channel: string; payload?: unknown } | ServerMessage {
  let message: unknown;
  try {
    if (isBinary) throw new Error('binary');
    message = JSON.parse(data.toString());
  } catch {
    // a client's message that is not JSON text: answered as such, the socket stays open
    return { id: null, error: { message: 'a message must be JSON text: { "id", "channel", "payload" }' } };
  }
  const parsed = clientMessageSchema.safeParse(message);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = [...issue.path.map(String), ...(issue.code === 'unrecognized_keys' ? issue.keys.slice(0, 1) : [])].join('.');
  const rawId = (message as { id?: unknown } | null)?.id;
  const id = typeof rawId === 'string' || typeof rawId === 'number' ? rawId : null;
  return { id, error: { message: `invalid message: ${field || 'message'}: ${issue.message}`, field: field || undefined } };
}

/** One authenticated socket: the session's events out, requests in (at most maxInFlightPerSocket waiting). */
function serveSocket(api: Api, logger: Logger, client: WebSocket): void {
  const send = (message: ServerMessage): void => {
    if (client.readyState === client.OPEN) client.send(JSON.stringify(message));
  };
  const unsubscribe = api.subscribe(send);
  let inFlight = 0;
  client.on('close', unsubscribe);
  // A client's protocol error (a frame over maxPayload, a malformed frame): ws closes with a code; nothing of ours failed.
  client.on('error', () => client.terminate());
  client.on('message', (data, isBinary) => {
    const message = parseClientMessage(data, isBinary);
    if (!('channel' in message)) return send(message);
    const { id, channel, payload } = message;
    if (inFlight >= maxInFlightPerSocket) {
      return send({ id, error: { message: `too many requests at once: at most ${maxInFlightPerSocket} may wait for a reply on one connection` } });
    }
    inFlight += 1;
    void api
      .dispatch(channel, payload)
      .catch((error: unknown) => {
        // dispatch answers errors as values: a rejection is a bug, logged, and still answered
        logger.error(`serve: ${channel} rejected`, error);
        return { error: { message: errorText(error) } };
      })
      .then((response) => {
        inFlight -= 1;
        send({ id, ...response } as ServerMessage);
      });
  });
}

function listen(server: http.Server, host: string, port: number): Promise<AddressInfo> {
  return new Promise<AddressInfo>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1';
  const token = options.token ?? randomBytes(32).toString('base64url');
  if (token.length < 16) throw new Error('the server token must have at least 16 characters');
  const logger = options.logger ?? stderrLogger;
  const staticRoot = options.staticDir ? await fs.promises.realpath(path.resolve(options.staticDir)) : undefined;
  const api = options.api ?? createApi({ logger });
  const ownsApi = options.api === undefined;
  // The port is known once listening (port 0 picks one); no request is handled before.
  const site: Site = { gate: { allowed: allowedHosts(host, options.allowHosts), port: 0, expected: digest(token), cookieName: '' }, staticRoot, token, logger };

  const server = http.createServer(httpHandler(site));
  // perMessageDeflate off (ws's server default, said aloud): no compressed message to inflate past the limit.
  const sockets = new WebSocketServer({ noServer: true, maxPayload: options.maxMessageBytes ?? maxMessageBytes, perMessageDeflate: false });
  server.on('upgrade', upgradeHandler(site, sockets));
  sockets.on('connection', (client: WebSocket) => serveSocket(api, logger, client));

  const address = await listen(server, host, options.port ?? 0);
  site.gate.port = address.port;
  site.gate.cookieName = tokenCookieName(address.port);
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
    cookieName: site.gate.cookieName,
    close,
  };
}
