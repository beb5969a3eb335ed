// serve's request checks as plain functions: the constant-time token compare, Host header parsing and the
// allowed names (DNS rebinding), Origin (cross-site pages), loopback detection for the --host warning.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as os from 'node:os';
import {
  allowedHosts,
  canonicalHostname,
  cookieValue,
  digest,
  hostAllowed,
  isLoopback,
  isWildcard,
  originAllowed,
  parseHost,
  tokenMatches,
} from '../../../app/server/guards';

describe('the token compare', () => {
  const token = 'x'.repeat(43);
  const expected = digest(token);

  test('accepts the token only', () => {
    assert.equal(tokenMatches(token, expected), true);
    assert.equal(tokenMatches(undefined, expected), false);
    assert.equal(tokenMatches('', expected), false);
    assert.equal(tokenMatches(`${'x'.repeat(42)}y`, expected), false, 'same length, last character wrong');
  });

  test('a guess of another length is a plain false, not a throw (timingSafeEqual needs equal lengths: digests have them)', () => {
    for (const guess of ['x', 'x'.repeat(42), 'x'.repeat(44), 'x'.repeat(10_000), '\u00e9'.repeat(43)]) {
      assert.equal(tokenMatches(guess, expected), false, `${guess.length} characters`);
    }
  });

  test('cookie values: the named cookie, decoded; a malformed escape is no value', () => {
    assert.equal(cookieValue('a=1; nnstudio_token_80=abc%2Fd; b=2', 'nnstudio_token_80'), 'abc/d');
    assert.equal(cookieValue('nnstudio_token=abc', 'nnstudio_token_80'), undefined);
    assert.equal(cookieValue('nnstudio_token_80=%E0%A4%A', 'nnstudio_token_80'), undefined);
    assert.equal(cookieValue(undefined, 'nnstudio_token_80'), undefined);
  });
});

describe('Host headers', () => {
  test('parse to a canonical name and port; anything else is undefined', () => {
    assert.deepEqual(parseHost('127.0.0.1:7860'), { hostname: '127.0.0.1', port: 7860 });
    assert.deepEqual(parseHost('LocalHost:7860'), { hostname: 'localhost', port: 7860 });
    assert.deepEqual(parseHost('localhost.:7860'), { hostname: 'localhost', port: 7860 });
    assert.deepEqual(parseHost('[0:0:0:0:0:0:0:1]:7860'), { hostname: '[::1]', port: 7860 });
    assert.deepEqual(parseHost('127.1:7860'), { hostname: '127.0.0.1', port: 7860 }, 'the URL parser folds short IPv4 forms');
    assert.deepEqual(parseHost('localhost'), { hostname: 'localhost', port: 80 });
    for (const bad of [undefined, '', 'evil.example@127.0.0.1:7860', '127.0.0.1:7860/x', 'a b:1', '::1:7860', 'localhost:99999', 'localhost:']) {
      assert.equal(parseHost(bad), undefined, String(bad));
    }
  });

  test('loopback names with our port pass; other names, ports or no Host are refused', () => {
    const allowed = allowedHosts('127.0.0.1');
    for (const good of ['127.0.0.1:7860', 'localhost:7860', '[::1]:7860', 'LOCALHOST:7860']) assert.ok(hostAllowed(good, allowed, 7860), good);
    for (const bad of ['evil.example:7860', 'localhost.evil.example:7860', '127.0.0.1:7861', 'localhost', '127.0.0.2:7860', '0.0.0.0:7860', undefined]) {
      assert.equal(hostAllowed(bad, allowed, 7860), false, String(bad));
    }
  });

  test('an explicit --host value is allowed, an IPv6 one in brackets', () => {
    assert.ok(hostAllowed('192.168.1.20:7860', allowedHosts('192.168.1.20'), 7860));
    assert.ok(hostAllowed('studio.lan:7860', allowedHosts('studio.lan'), 7860));
    assert.ok(hostAllowed('[fe80::1]:7860', allowedHosts('fe80::1'), 7860));
    assert.equal(canonicalHostname('::1'), '[::1]');
  });

  test('a wildcard bind also answers to this machine\'s addresses and host name', () => {
    const allowed = allowedHosts('0.0.0.0');
    assert.ok(hostAllowed(`${os.hostname()}:7860`, allowed, 7860));
    const address = Object.values(os.networkInterfaces()).flat().find((entry) => entry?.family === 'IPv4')?.address;
    if (address) assert.ok(hostAllowed(`${address}:7860`, allowed, 7860), address);
    assert.equal(hostAllowed('evil.example:7860', allowed, 7860), false);
  });

  test('--allow-host: a name with our port, or exactly a name:port', () => {
    const allowed = allowedHosts('127.0.0.1', ['localhost:9000', 'studio.lan', '[::1]:9001', 'fe80::2']);
    assert.ok(hostAllowed('localhost:9000', allowed, 7860), 'a tunnel on another local port');
    assert.ok(hostAllowed('[::1]:9001', allowed, 7860));
    assert.ok(hostAllowed('studio.lan:7860', allowed, 7860));
    assert.ok(hostAllowed('[fe80::2]:7860', allowed, 7860), 'a bare IPv6 address is a name, not name:port');
    assert.equal(hostAllowed('studio.lan:9000', allowed, 7860), false);
    assert.equal(hostAllowed('127.0.0.1:9000', allowed, 7860), false, 'only the name given gets the other port');
  });
});

describe('Origin', () => {
  test('absent is fine (not a browser, or a same-origin GET)', () => {
    assert.ok(originAllowed(undefined, '127.0.0.1:7860'));
  });

  test('must be the server as the browser addressed it', () => {
    assert.ok(originAllowed('http://127.0.0.1:7860', '127.0.0.1:7860'));
    assert.ok(originAllowed('http://LOCALHOST:7860', 'localhost:7860'));
    assert.ok(originAllowed('https://studio.example', 'studio.example'), 'https in front of a plain-HTTP proxy hop');
    for (const [origin, host] of [
      ['http://evil.example', '127.0.0.1:7860'],
      ['http://evil.example:7860', '127.0.0.1:7860'],
      ['http://localhost:7860', '127.0.0.1:7860'],
      ['http://127.0.0.1:7861', '127.0.0.1:7860'],
      ['null', '127.0.0.1:7860'],
      ['file://', '127.0.0.1:7860'],
      ['chrome-extension://abc', '127.0.0.1:7860'],
      ['http://127.0.0.1:7860', undefined],
    ] as const) {
      assert.equal(originAllowed(origin, host), false, `${origin} on ${host}`);
    }
  });
});

describe('loopback', () => {
  test('127.0.0.0/8, ::1 and localhost are loopback; the rest is not', () => {
    for (const address of ['127.0.0.1', '127.0.0.2', '::1', 'localhost', '::ffff:127.0.0.1']) assert.ok(isLoopback(address), address);
    for (const address of ['0.0.0.0', '::', '192.168.1.2', '10.0.0.1', 'studio.lan', 'fe80::1']) assert.equal(isLoopback(address), false, address);
    assert.ok(isWildcard('0.0.0.0') && isWildcard('::'));
  });
});
