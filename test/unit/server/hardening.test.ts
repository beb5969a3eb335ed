// serve against what a hostile page, a rebinding DNS name or a careless client sends: the token on every
// path and on the WebSocket (missing, wrong of the same and another length, in each carrier), the Host and
// Origin checks on HTTP and on the handshake, request bodies, message size and in-flight limits, and the
// security headers on every answer.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import WebSocket from 'ws';
import type { Api } from '../../../app/api/session';
import type { ApiResponse, ServerMessage } from '../../../app/api/types';
import { maxUploadBase64Chars, payloadSchemas } from '../../../app/api/schemas';
import { maxInFlightPerSocket, maxMessageBytes, startServer, type RunningServer } from '../../../app/server';
import { within } from '../api/helpers';
import { handshake, request, sameLengthWrong, tokenQuery } from './support';

let staticDir: string;
before(() => {
  staticDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-hardening-'));
  fs.mkdirSync(path.join(staticDir, 'assets'));
  fs.writeFileSync(path.join(staticDir, 'index.html'), '<!doctype html><title>NN Studio</title>');
  fs.writeFileSync(path.join(staticDir, 'assets', 'app.js'), 'console.log(1)');
});
after(() => fs.rmSync(staticDir, { recursive: true, force: true }));

/** An Api whose dispatch answers when the test says so; subscribe/close/openLastSession do nothing. */
function heldApi() {
  const held: (() => void)[] = [];
  const api: Api = {
    dispatch: (channel) => new Promise<ApiResponse<unknown>>((resolve) => held.push(() => resolve({ result: channel }))),
    subscribe: () => () => {},
    close: async () => {},
    openLastSession: async () => undefined,
  };
  return { api, held };
}

describe('the token', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ staticDir, api: heldApi().api });
  });
  after(() => server.close());

  const paths = ['/', '/index.html', '/assets/app.js', '/no-such-file', '/api'];

  test('no token: 401 on every path, static files and /api alike, and on the handshake', async () => {
    for (const requestPath of paths) assert.equal((await request(server, requestPath)).status, 401, requestPath);
    assert.equal(await handshake(server, ''), 401);
  });

  test('a wrong token, of the same length or another, is 401 in every carrier (never a 500 from the compare)', async () => {
    const guesses = [sameLengthWrong(server.token), server.token.slice(0, 10), `${server.token}x`, 'x'.repeat(5000), ''];
    for (const guess of guesses) {
      const what = `a guess of ${guess.length} characters`;
      assert.equal((await request(server, `/?token=${encodeURIComponent(guess)}`)).status, 401, `${what} in the query`);
      assert.equal((await request(server, '/', { headers: { Cookie: `${server.cookieName}=${encodeURIComponent(guess)}` } })).status, 401, `${what} in the cookie`);
      assert.equal((await request(server, '/api', { headers: { Authorization: `Bearer ${guess}` } })).status, 401, `${what} in the header`);
      assert.equal(await handshake(server, `?token=${encodeURIComponent(guess)}`), 401, `${what} on the handshake`);
      assert.equal(await handshake(server, '', { headers: { Authorization: `Bearer ${guess}` } }), 401, `${what} as a bearer on the handshake`);
    }
    assert.equal((await request(server, '/', { headers: { Cookie: `${server.cookieName}=%E0%A4%A` } })).status, 401, 'a malformed cookie');
  });

  test('the token in the query, the port-named cookie, or Authorization: Bearer (any case); nowhere else', async () => {
    const query = await request(server, `/${tokenQuery(server)}`);
    assert.equal(query.status, 200);
    const cookie = String(query.headers['set-cookie']?.[0] ?? '');
    assert.match(cookie, new RegExp(`^nnstudio_token_${server.port}=[^;]+; HttpOnly; SameSite=Strict; Path=/$`));
    const cookieHeader = { Cookie: cookie.split(';')[0] };
    assert.equal((await request(server, '/assets/app.js', { headers: cookieHeader })).status, 200);
    assert.equal((await request(server, '/assets/app.js', { headers: { Authorization: `Bearer ${server.token}` } })).status, 200);
    assert.equal((await request(server, '/assets/app.js', { headers: { Authorization: `bearer ${server.token}` } })).status, 200);
    // Not a carrier: another cookie name (another server's), Basic auth, a made-up header, the query under another name.
    assert.equal((await request(server, '/', { headers: { Cookie: `nnstudio_token=${server.token}` } })).status, 401);
    assert.equal((await request(server, '/', { headers: { Authorization: `Basic ${Buffer.from(`u:${server.token}`).toString('base64')}` } })).status, 401);
    assert.equal((await request(server, '/', { headers: { 'X-Token': server.token } })).status, 401);
    assert.equal((await request(server, `/?access_token=${encodeURIComponent(server.token)}`)).status, 401);
    assert.equal((await request(server, `/?token=${sameLengthWrong(server.token)}&token=${encodeURIComponent(server.token)}`)).status, 401, 'the first token counts');

    assert.equal(await handshake(server, tokenQuery(server)), 101);
    assert.equal(await handshake(server, '', { headers: cookieHeader }), 101);
    assert.equal(await handshake(server, '', { headers: { Authorization: `Bearer ${server.token}` } }), 101);
  });

  test('/api over plain HTTP with the token says it is a WebSocket (426)', async () => {
    const reply = await request(server, `/api${tokenQuery(server)}`);
    assert.equal(reply.status, 426);
    assert.equal(reply.headers.upgrade, 'websocket');
  });

  test('a WebSocket to another path is 404, and only after the token', async () => {
    assert.equal(await handshake(server, '', { path: '/other' }), 401);
    assert.equal(await handshake(server, tokenQuery(server), { path: '/other' }), 404);
  });
});

describe('Host and Origin', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ staticDir, api: heldApi().api, allowHosts: ['localhost:9000'] });
  });
  after(() => server.close());
  const auth = () => ({ Authorization: `Bearer ${server.token}` });

  test('HTTP: loopback names with our port pass; a rebound name or another port is 421 even with the token, no Host 400', async () => {
    for (const host of [`127.0.0.1:${server.port}`, `localhost:${server.port}`, `[::1]:${server.port}`, 'localhost:9000']) {
      assert.equal((await request(server, '/', { headers: { ...auth(), Host: host } })).status, 200, host);
    }
    for (const host of [`evil.example:${server.port}`, `127.0.0.1.nip.io:${server.port}`, `127.0.0.1:${server.port + 1}`, '127.0.0.1', 'localhost:9001']) {
      const reply = await request(server, '/', { headers: { ...auth(), Host: host } });
      assert.equal(reply.status, 421, host);
      assert.match(reply.body, /misdirected request: this server answers to .*localhost:9000/);
    }
    // Node's own parser refuses an HTTP/1.1 request without Host (requireHostHeader) before we see it.
    assert.equal((await request(server, '/', { headers: auth(), setHost: false })).status, 400, 'no Host header');
  });

  test('the WebSocket handshake: the same Host check', async () => {
    assert.equal(await handshake(server, tokenQuery(server), { headers: { Host: `localhost:${server.port}` } }), 101);
    assert.equal(await handshake(server, tokenQuery(server), { headers: { Host: `evil.example:${server.port}` } }), 421);
    assert.equal(await handshake(server, tokenQuery(server), { headers: { Host: `127.0.0.1:${server.port + 1}` } }), 421);
  });

  test('Origin: our own passes; another site, another port, another of our names, or "null" is 403 on HTTP and WebSocket', async () => {
    const own = `http://127.0.0.1:${server.port}`;
    assert.equal((await request(server, '/', { headers: { ...auth(), Origin: own } })).status, 200);
    assert.equal(await handshake(server, tokenQuery(server), { origin: own }), 101);
    for (const origin of ['http://evil.example', `http://evil.example:${server.port}`, `http://127.0.0.1:${server.port + 1}`, `http://localhost:${server.port}`, 'null']) {
      assert.equal((await request(server, '/', { headers: { ...auth(), Origin: origin } })).status, 403, origin);
      assert.equal(await handshake(server, tokenQuery(server), { origin }), 403, origin);
    }
  });

  test('an explicit --host address is answered by its own name', async () => {
    const other = await startServer({ host: '127.0.0.2', staticDir, api: heldApi().api });
    try {
      assert.equal(other.host, '127.0.0.2');
      assert.equal((await request(other, '/', { headers: { Authorization: `Bearer ${other.token}` } })).status, 200);
      assert.equal((await request(other, '/', { headers: { Authorization: `Bearer ${other.token}`, Host: `studio.lan:${other.port}` } })).status, 421);
    } finally {
      await other.close();
    }
  });
});

describe('request bodies and methods', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ staticDir, api: heldApi().api });
  });
  after(() => server.close());
  const auth = () => ({ Authorization: `Bearer ${server.token}` });

  test('a body is refused (413) whatever the method, before the token is even looked at', async () => {
    for (const method of ['POST', 'PUT', 'GET']) {
      const reply = await request(server, '/', { method, headers: auth(), body: '{"channel":"devices:list"}' });
      assert.equal(reply.status, 413, method);
      assert.match(reply.body, /request bodies are not accepted/);
      assert.equal(reply.headers.connection, 'close');
    }
    assert.equal((await request(server, '/', { method: 'POST', headers: auth(), body: 'x'.repeat(100_000), chunked: true })).status, 413, 'chunked');
    assert.equal((await request(server, '/', { method: 'POST', body: 'x' })).status, 413, 'without the token');
  });

  test('no body: other methods are 405; GET with Content-Length: 0 is fine; the server still answers', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']) {
      const reply = await request(server, '/', { method, headers: auth() });
      assert.equal(reply.status, 405, method);
      assert.equal(reply.headers.allow, 'GET, HEAD');
    }
    assert.equal((await request(server, '/', { headers: { ...auth(), 'Content-Length': '0' } })).status, 200);
    const head = await request(server, '/', { method: 'HEAD', headers: auth() });
    assert.equal(head.status, 200);
    assert.equal(head.body, '');
  });
});

describe('security headers', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ staticDir, api: heldApi().api });
  });
  after(() => server.close());

  test('on every answer: 200, 401, 403, 404, 405, 413, 421, 426', async () => {
    const auth = { Authorization: `Bearer ${server.token}` };
    const replies = [
      await request(server, '/', { headers: auth }),
      await request(server, '/assets/app.js', { headers: auth }),
      await request(server, '/'),
      await request(server, '/', { headers: { ...auth, Origin: 'http://evil.example' } }),
      await request(server, '/missing', { headers: auth }),
      await request(server, '/', { method: 'DELETE', headers: auth }),
      await request(server, '/', { method: 'POST', headers: auth, body: 'x' }),
      await request(server, '/', { headers: { ...auth, Host: 'evil.example' } }),
      await request(server, '/api', { headers: auth }),
    ];
    assert.deepEqual(replies.map((reply) => reply.status), [200, 200, 401, 403, 404, 405, 413, 421, 426]);
    for (const reply of replies) {
      const csp = String(reply.headers['content-security-policy']);
      assert.match(csp, /frame-ancestors 'none'/, `${reply.status}`);
      assert.match(csp, /default-src 'self'/);
      assert.doesNotMatch(csp, /unsafe-eval|unsafe-inline|\*|https?:|wss?:/);
      assert.equal(reply.headers['x-frame-options'], 'DENY');
      assert.equal(reply.headers['x-content-type-options'], 'nosniff');
      assert.equal(reply.headers['referrer-policy'], 'no-referrer');
      assert.equal(reply.headers['cross-origin-opener-policy'], 'same-origin');
      assert.equal(reply.headers['cross-origin-resource-policy'], 'same-origin');
      assert.equal(reply.headers['cache-control'], 'no-store');
      assert.equal(reply.headers['access-control-allow-origin'], undefined, 'no CORS');
    }
  });
});

describe('WebSocket limits', () => {
  test('the message limit fits the largest upload the API takes, and ws inflates nothing', () => {
    assert.ok(maxMessageBytes > maxUploadBase64Chars + 1024 * 1024, 'an upload at the API limit plus its envelope fits');
  });

  test('a message over the limit closes the socket with 1009 before it is buffered; smaller ones are answered', async () => {
    const { api, held } = heldApi();
    const server = await startServer({ api, maxMessageBytes: 4096 });
    try {
      const socket = new WebSocket(`${server.webSocketUrl}${tokenQuery(server)}`);
      await within(new Promise((resolve) => socket.once('open', resolve)), 5000, 'open');
      const replies: ServerMessage[] = [];
      socket.on('message', (data) => replies.push(JSON.parse(data.toString())));
      socket.send(JSON.stringify({ id: 1, channel: 'devices:list', payload: { pad: 'x'.repeat(3000) } }));
      await within((async () => { while (held.length === 0) await new Promise((r) => setTimeout(r, 5)); })(), 5000, 'the small message to arrive');
      held.shift()?.();
      await within((async () => { while (replies.length === 0) await new Promise((r) => setTimeout(r, 5)); })(), 5000, 'its reply');
      assert.deepEqual(replies[0], { id: 1, result: 'devices:list' });
      const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
      socket.send(JSON.stringify({ id: 2, channel: 'devices:list', payload: { pad: 'x'.repeat(5000) } }));
      assert.equal(await within(closed, 5000, 'the close'), 1009);
      assert.equal(held.length, 0, 'the large message never reached the API');
    } finally {
      await server.close();
    }
  });

  test(`at most ${maxInFlightPerSocket} requests wait for a reply per socket; the next is an error value, and after the replies it goes on`, async () => {
    const { api, held } = heldApi();
    const server = await startServer({ api });
    try {
      const socket = new WebSocket(`${server.webSocketUrl}${tokenQuery(server)}`);
      await within(new Promise((resolve) => socket.once('open', resolve)), 5000, 'open');
      const replies: ServerMessage[] = [];
      socket.on('message', (data) => replies.push(JSON.parse(data.toString())));
      const until = (done: () => boolean, what: string) =>
        within((async () => { while (!done()) await new Promise((r) => setTimeout(r, 5)); })(), 5000, what);
      for (let id = 1; id <= maxInFlightPerSocket + 1; id++) socket.send(JSON.stringify({ id, channel: 'devices:list' }));
      await until(() => replies.length === 1, 'the refusal');
      const refused = replies[0] as { id: number; error: { message: string } };
      assert.equal(refused.id, maxInFlightPerSocket + 1);
      assert.match(refused.error.message, /too many requests at once: at most 32/);
      assert.equal(held.length, maxInFlightPerSocket);
      for (const release of held.splice(0)) release();
      await until(() => replies.length === maxInFlightPerSocket + 1, 'the held replies');
      socket.send(JSON.stringify({ id: 'after', channel: 'devices:list' }));
      await until(() => held.length === 1, 'the next request to reach the API');
      held.shift()?.();
      await until(() => replies.some((reply) => 'id' in reply && reply.id === 'after'), 'its reply');
      socket.terminate();
    } finally {
      await server.close();
    }
  });

  test('a binary frame is an error value; the socket stays open', async () => {
    const { api, held } = heldApi();
    const server = await startServer({ api });
    try {
      const socket = new WebSocket(`${server.webSocketUrl}${tokenQuery(server)}`);
      await within(new Promise((resolve) => socket.once('open', resolve)), 5000, 'open');
      const reply = within(new Promise<ServerMessage>((resolve) => socket.once('message', (data) => resolve(JSON.parse(data.toString())))), 5000, 'the reply');
      socket.send(Buffer.from(JSON.stringify({ id: 1, channel: 'devices:list' })));
      assert.match(((await reply) as { error: { message: string } }).error.message, /must be JSON text/);
      assert.equal(held.length, 0);
      assert.equal(socket.readyState, WebSocket.OPEN);
      socket.terminate();
    } finally {
      await server.close();
    }
  });
});

describe('uploads', () => {
  test('one over the API limit is an error value naming the field and the limit', () => {
    const tooLarge = 'A'.repeat(maxUploadBase64Chars + 4);
    const parsed = payloadSchemas['models:import'].safeParse({ source: { kind: 'upload', fileName: 'big.safetensors', base64: tooLarge } });
    assert.equal(parsed.success, false);
    const issue = parsed.error?.issues[0];
    assert.deepEqual(issue?.path, ['source', 'base64']);
    assert.match(issue?.message ?? '', /too large: an upload may be at most 256 MiB of base64 \(a file of 192 MiB\)/);
    assert.equal(parsed.error?.issues.length, 1, 'the base64 pattern is not also run over it');
  });
});
