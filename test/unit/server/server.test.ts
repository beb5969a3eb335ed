// `serve`'s transport: the token on HTTP and on the WebSocket, static files with a strict CSP and no way
// out of their folder, the API over the socket, invalid messages answered, events pushed during a run.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import WebSocket from 'ws';
import type { DeviceInfo, ServerMessage, TrainingDone } from '../../../app/api/types';
import { startServer, type RunningServer } from '../../../app/server';
import { irisCsv, within } from '../api/helpers';

interface HttpReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A raw GET (no URL normalisation, unlike fetch), so traversal attempts reach the server as written. */
function get(server: RunningServer, requestPath: string, headers: Record<string, string> = {}): Promise<HttpReply> {
  return within(
    new Promise((resolve, reject) => {
      const request = http.request({ host: server.host, port: server.port, path: requestPath, headers }, (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
      });
      request.on('error', reject);
      request.end();
    }),
    5000,
    `GET ${requestPath}`,
  );
}

/** A WebSocket client: call() waits for the reply with its id, events are collected. */
class Client {
  readonly messages: ServerMessage[] = [];
  private nextId = 1;
  private waiters: { match: (message: ServerMessage) => boolean; resolve: (message: ServerMessage) => void }[] = [];

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const message = JSON.parse(data.toString()) as ServerMessage;
      this.messages.push(message);
      this.waiters = this.waiters.filter((waiter) => {
        if (!waiter.match(message)) return true;
        waiter.resolve(message);
        return false;
      });
    });
  }

  static open(url: string, protocols?: string[]): Promise<Client> {
    const socket = new WebSocket(url, protocols);
    return within(
      new Promise((resolve, reject) => {
        socket.once('open', () => resolve(new Client(socket)));
        socket.once('unexpected-response', (_request, response) => reject(new Error(`handshake refused: ${response.statusCode}`)));
        socket.once('error', reject);
      }),
      5000,
      'the WebSocket to open',
    );
  }

  waitFor(match: (message: ServerMessage) => boolean, ms: number, what: string): Promise<ServerMessage> {
    const seen = this.messages.find(match);
    if (seen) return Promise.resolve(seen);
    return within(new Promise((resolve) => this.waiters.push({ match, resolve })), ms, what);
  }

  sendRaw(text: string): void {
    this.socket.send(text);
  }

  async call(channel: string, payload?: unknown, ms = 10_000): Promise<ServerMessage> {
    const id = this.nextId++;
    this.socket.send(JSON.stringify({ id, channel, payload }));
    return this.waitFor((message) => 'id' in message && message.id === id, ms, `the reply to ${channel}`);
  }

  close(): void {
    this.socket.terminate();
  }
}

describe('serve', () => {
  let server: RunningServer;
  let staticDir: string;
  let outside: string;

  before(async () => {
    outside = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-serve-test-'));
    staticDir = path.join(outside, 'renderer');
    fs.mkdirSync(path.join(staticDir, 'assets'), { recursive: true });
    fs.writeFileSync(path.join(staticDir, 'index.html'), '<!doctype html><title>NN Studio</title>');
    fs.writeFileSync(path.join(staticDir, 'assets', 'app.js'), 'console.log(1)');
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'do not serve');
    server = await startServer({ staticDir });
  });
  after(async () => {
    await within(server.close(), 15_000, 'the server to close');
    fs.rmSync(outside, { recursive: true, force: true });
  });

  test('listens on 127.0.0.1 by default, with a random token', async () => {
    assert.equal(server.host, '127.0.0.1');
    assert.ok(server.url.startsWith('http://127.0.0.1:'), server.url);
    assert.ok(server.port > 0);
    assert.ok(server.token.length >= 32);
    const other = await startServer();
    try {
      assert.notEqual(other.token, server.token);
      assert.equal(other.host, '127.0.0.1');
    } finally {
      await other.close();
    }
  });

  test('static files need the token: 401 without or with a wrong one', async () => {
    const missing = await get(server, '/');
    assert.equal(missing.status, 401);
    const wrong = await get(server, `/?token=${'x'.repeat(43)}`);
    assert.equal(wrong.status, 401);
    const wrongCookie = await get(server, '/assets/app.js', { Cookie: `${server.cookieName}=nope` });
    assert.equal(wrongCookie.status, 401);
  });

  test('with the token: the page, a strict CSP, a cookie for the page\'s own requests', async () => {
    const page = await get(server, `/?token=${encodeURIComponent(server.token)}`);
    assert.equal(page.status, 200);
    assert.match(page.body, /<title>NN Studio<\/title>/);
    assert.match(page.headers['content-type'] ?? '', /^text\/html/);
    const csp = String(page.headers['content-security-policy'] ?? '');
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
    assert.equal(page.headers['referrer-policy'], 'no-referrer');
    const cookie = (page.headers['set-cookie'] ?? [])[0] ?? '';
    assert.match(cookie, new RegExp(`^${server.cookieName}=.+; HttpOnly; SameSite=Strict`));

    const script = await get(server, '/assets/app.js', { Cookie: cookie.split(';')[0] });
    assert.equal(script.status, 200);
    assert.match(script.headers['content-type'] ?? '', /^text\/javascript/);
    const bearer = await get(server, '/assets/app.js', { Authorization: `Bearer ${server.token}` });
    assert.equal(bearer.status, 200);
  });

  test('no way out of the static folder', async () => {
    const auth = { Authorization: `Bearer ${server.token}` };
    for (const attempt of ['/../secret.txt', '/%2e%2e/secret.txt', '/assets/..%2f..%2fsecret.txt', '/..%5csecret.txt', '/%00index.html']) {
      const reply = await get(server, attempt, auth);
      assert.equal(reply.status, 404, `${attempt} gave ${reply.status}`);
      assert.doesNotMatch(reply.body, /do not serve/);
    }
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(staticDir, 'link.txt'));
    const linked = await get(server, '/link.txt', auth);
    assert.equal(linked.status, 404, 'a symlink out of the folder is not followed');
  });

  test('the WebSocket refuses a missing or wrong token, and another origin', async () => {
    await assert.rejects(Client.open(server.webSocketUrl), /handshake refused: 401/);
    await assert.rejects(Client.open(`${server.webSocketUrl}?token=wrong-token-wrong-token`), /handshake refused: 401/);
    const socket = new WebSocket(`${server.webSocketUrl}?token=${encodeURIComponent(server.token)}`, { origin: 'http://evil.example' });
    const refused = await within(
      new Promise<number>((resolve) => {
        socket.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
        socket.once('open', () => resolve(101));
        socket.once('error', () => resolve(-1));
      }),
      5000,
      'the cross-origin handshake',
    );
    socket.terminate();
    assert.equal(refused, 403);
  });

  test('devices:list over the WebSocket; invalid messages get error values and the socket stays open', async () => {
    const client = await Client.open(`${server.webSocketUrl}?token=${encodeURIComponent(server.token)}`);
    try {
      const devices = await client.call('devices:list');
      assert.ok('result' in devices, JSON.stringify(devices));
      const list = (devices as { result: DeviceInfo[] }).result;
      assert.ok(list.some((device) => device.kind === 'cpu'), 'the CPU is always listed');

      client.sendRaw('{ not json');
      const broken = await client.waitFor((message) => 'id' in message && message.id === null && message.error !== undefined, 5000, 'the error for bad JSON');
      assert.match((broken as { error: { message: string } }).error.message, /must be JSON/);

      client.sendRaw(JSON.stringify({ id: 'a1', payload: {} }));
      const noChannel = await client.waitFor((message) => 'id' in message && message.id === 'a1', 5000, 'the error for a missing channel');
      assert.equal((noChannel as { error: { field: string } }).error.field, 'channel');

      const badPayload = await client.call('datasets:preview', { datasetId: 7 });
      assert.equal((badPayload as { error: { field: string } }).error.field, 'datasetId');

      const stillThere = await client.call('devices:list');
      assert.ok('result' in stillThere && Array.isArray(stillThere.result), 'the socket still answers');
    } finally {
      client.close();
    }
  });

  test('training events reach the client during a run', async () => {
    const client = await Client.open(`${server.webSocketUrl}?token=${encodeURIComponent(server.token)}`);
    try {
      const opened = await client.call('datasets:open', { source: { kind: 'path', path: irisCsv } });
      const datasetId = (opened as { result: { id: string } }).result.id;
      const started = await client.call('training:start', {
        datasetId,
        model: { layers: 'dense:8:relu,dense:3' },
        epochs: 2,
        batchSize: 16,
        device: 'cpu',
        threads: 1,
      });
      const runId = (started as { result: { runId: string } }).result.runId;
      assert.ok(runId, JSON.stringify(started));
      const done = await client.waitFor(
        (message) => 'event' in message && message.event === 'training:done' && message.payload.runId === runId,
        60_000,
        'training:done',
      );
      assert.equal((done as { payload: TrainingDone }).payload.status, 'completed');
      const epochs = client.messages.filter(
        (message) => 'event' in message && message.event === 'training:progress' && message.payload.runId === runId && message.payload.type === 'epoch',
      );
      assert.equal(epochs.length, 2, 'both epoch events were pushed');
    } finally {
      client.close();
    }
  });
});
