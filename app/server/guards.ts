// `serve`'s checks on every HTTP request and WebSocket handshake, as plain functions: the token (constant
// time), the Host header (DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1 sends
// `Host: evil.example:P`) and the Origin header (another site's page). Nothing here holds state.
import { createHash, timingSafeEqual } from 'node:crypto';
import type * as http from 'node:http';
import * as os from 'node:os';

// ---- the token ----

export function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/**
 * Constant-time: compares SHA-256 digests, which always have the same length, so neither the token's
 * length nor how much of it a guess got right shows in the time (timingSafeEqual itself would throw on
 * unequal lengths).
 */
export function tokenMatches(given: string | undefined, expected: Buffer): boolean {
  return given !== undefined && timingSafeEqual(digest(given), expected);
}

export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at <= 0 || part.slice(0, at).trim() !== name) continue;
    try {
      return decodeURIComponent(part.slice(at + 1).trim());
    } catch {
      return undefined; // a malformed %-escape is no token
    }
  }
  return undefined;
}

export type TokenCarrier = 'query' | 'cookie' | 'header';

/** Which way the request carried a valid token, if any: `?token=`, the cookie, or `Authorization: Bearer`. */
export function authenticate(request: http.IncomingMessage, url: URL, expected: Buffer, cookieName: string): TokenCarrier | undefined {
  if (tokenMatches(url.searchParams.get('token') ?? undefined, expected)) return 'query';
  if (tokenMatches(cookieValue(request.headers.cookie, cookieName), expected)) return 'cookie';
  const bearer = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? '')?.[1];
  if (tokenMatches(bearer, expected)) return 'header';
  return undefined;
}

// ---- Host ----

/** A host and port as a URL would write them: lower case, IPv6 in brackets, IPv4 in dotted quads. */
export interface HostAndPort {
  hostname: string;
  port: number;
}

/**
 * A Host header (or `--allow-host` value) as `{ hostname, port }`, or undefined when it is not a plain
 * `name[:port]`, `a.b.c.d[:port]` or `[v6][:port]` (no user info, path or spaces). No port means 80.
 */
export function parseHost(value: string | undefined): HostAndPort | undefined {
  if (value === undefined || !/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/.test(value)) return undefined;
  try {
    const url = new URL(`http://${value}`);
    const port = url.port === '' ? 80 : Number(url.port);
    // "localhost." is "localhost": the trailing dot only says the name is absolute.
    return { hostname: url.hostname.replace(/\.$/, ''), port };
  } catch {
    return undefined; // the URL parser refuses it (a port over 65535, a bad IPv6 form): not a host we answer to
  }
}

/** The bind address as the Host header would name it (an IPv6 address gets brackets). */
export function canonicalHostname(address: string): string | undefined {
  return parseHost(address.includes(':') && !address.startsWith('[') ? `[${address}]` : address)?.hostname;
}

/** Whether `address` (a bind address or name) only ever means this machine. */
export function isLoopback(address: string): boolean {
  const name = canonicalHostname(address);
  if (name === undefined) return false;
  return name === 'localhost' || name === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(name) || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(name);
}

export function isWildcard(address: string): boolean {
  return address === '0.0.0.0' || address === '::' || address === '[::]';
}

/** The names a browser may have used to reach us: loopback always, the bind address, `extra`. */
export interface AllowedHosts {
  /** Allowed with the server's own port. */
  names: Set<string>;
  /** `--allow-host name:port` entries: allowed with exactly that port (a tunnel on another local port). */
  withPort: Set<string>;
}

/**
 * Loopback names, the address bound, and `allowHosts` ("name" or "name:port"). A wildcard bind (0.0.0.0,
 * ::) also answers to this machine's interface addresses and host name, since that is how it is reached.
 */
export function allowedHosts(bindHost: string, allowHosts: readonly string[] = []): AllowedHosts {
  const names = new Set(['localhost', '127.0.0.1', '[::1]']);
  const withPort = new Set<string>();
  const add = (value: string | undefined) => {
    const name = value === undefined ? undefined : canonicalHostname(value);
    if (name !== undefined) names.add(name);
  };
  add(bindHost);
  if (isWildcard(bindHost)) {
    add(os.hostname());
    for (const addresses of Object.values(os.networkInterfaces())) for (const entry of addresses ?? []) add(entry.address);
  }
  for (const entry of allowHosts) {
    // "fe80::1" is an address, not "fe80:" and a port: only a bracketed IPv6 address may have a port.
    const bareIpv6 = !entry.startsWith('[') && entry.split(':').length > 2;
    const parsed = !bareIpv6 && /:\d+$/.test(entry) ? parseHost(entry) : undefined;
    if (parsed) withPort.add(`${parsed.hostname}:${parsed.port}`);
    else add(entry);
  }
  return { names, withPort };
}

/** Whether a request's Host header names us: an allowed name with our port, or an allowed name:port. */
export function hostAllowed(header: string | undefined, allowed: AllowedHosts, port: number): boolean {
  const host = parseHost(header);
  if (!host) return false;
  return (allowed.names.has(host.hostname) && host.port === port) || allowed.withPort.has(`${host.hostname}:${host.port}`);
}

// ---- Origin ----

/**
 * No Origin (not a browser, or a same-origin GET) is fine; otherwise it must be this very server as the
 * browser addressed it: http(s) and the same host and port as the Host header. "null" (a sandboxed frame,
 * a file:// page) is refused.
 */
export function originAllowed(origin: string | undefined, hostHeader: string | undefined): boolean {
  if (origin === undefined) return true;
  const host = parseHost(hostHeader);
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // an Origin that does not parse is no origin of ours
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !host) return false;
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  // A TLS tunnel in front of us: the browser says https://name, the Host header says name (port 80 or 443).
  const samePort = port === host.port || (url.port === '' && url.protocol === 'https:' && host.port === 80);
  return url.hostname === host.hostname && samePort;
}
