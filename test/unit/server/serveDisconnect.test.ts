// `serve` when a client goes away mid-training (docs/RELIABILITY.md, "Faults"): the run and the server go
// on; a client that connects later sees the run's state with training:status, can control it, and gets
// its training:done.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import type { RunInfo, ServerMessage, TrainingDone } from '../../../app/api/types';
import { startServer, type RunningServer } from '../../../app/server';
import { within } from '../api/helpers';

/** A token-bearing WebSocket client: call() waits for its reply; events are kept. */
class Client {
  readonly messages: ServerMessage[] = [];
  private nextId = 1;
  private waiters: { match: (message: ServerMessage) => boolean; resolve: (message: ServerMessage) => void }[] = [];

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const message = JSON.parse(data.toString()) as ServerMessage;
      this.messages.push(message);
      this.waiters = this.waiters.filter((waiter) => (waiter.match(message) ? (waiter.resolve(message), false) : true));
    });
  }

  static open(server: RunningServer): Promise<Client> {
    const socket = new WebSocket(`${server.webSocketUrl}?token=${encodeURIComponent(server.token)}`);
    return within(
      new Promise((resolve, reject) => {
        socket.once('open', () => resolve(new Client(socket)));
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

  async call<T>(channel: string, payload?: unknown): Promise<T> {
    const id = this.nextId++;
    this.socket.send(JSON.stringify({ id, channel, payload }));
    const reply = (await this.waitFor((message) => 'id' in message && message.id === id, 10_000, `the reply to ${channel}`)) as { result?: T; error?: { message: string } };
    if (reply.error) throw new Error(`${channel}: ${reply.error.message}`);
    return reply.result as T;
  }

  doneOf(runId: string, ms = 60_000): Promise<TrainingDone> {
    return this.waitFor((message) => 'event' in message && message.event === 'training:done' && message.payload.runId === runId, ms, `training:done of ${runId}`)
      .then((message) => (message as { payload: TrainingDone }).payload);
  }

  /** An abrupt drop (no close handshake), as when a laptop sleeps or the network goes. */
  drop(): void {
    this.socket.terminate();
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('serve: a client dropping mid-training', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer();
  });
  after(async () => {
    await within(server.close(), 15_000, 'the server to close');
  });

  const longRun = (datasetId: string) => ({ datasetId, model: { layers: 'dense:256:relu,dense:10' }, epochs: 1000, batchSize: 64, device: 'cpu', threads: 1 });

  test('the run goes on without its client; a new client sees it running, cancels it and gets training:done', async () => {
    const first = await Client.open(server);
    const { id: datasetId } = await first.call<{ id: string }>('datasets:open', { source: { kind: 'mnist', limit: 1000 } });
    const { runId } = await first.call<{ runId: string }>('training:start', longRun(datasetId));
    await first.waitFor((message) => 'event' in message && message.event === 'training:progress' && message.payload.type === 'step', 30_000, 'a step event');
    first.drop();

    await sleep(300);
    const second = await Client.open(server);
    const before = await second.call<RunInfo>('training:status', { runId });
    assert.equal(before.state, 'running');
    await sleep(300);
    const later = await second.call<RunInfo>('training:status', { runId });
    assert.ok((later.lastStep?.globalStep ?? 0) > (before.lastStep?.globalStep ?? 0), 'the run kept training after its client dropped');
    await second.waitFor((message) => 'event' in message && message.event === 'training:progress' && message.payload.runId === runId, 10_000, 'progress events on the new client');
    const cancelling = await second.call<RunInfo>('training:cancel', { runId });
    assert.equal(cancelling.state, 'cancelling');
    const done = await second.doneOf(runId);
    assert.equal(done.status, 'cancelled');
    assert.ok(done.modelId, 'the model is kept for the new client');
    const models = await second.call<{ id: string }[]>('models:list');
    assert.ok(models.some((model) => model.id === done.modelId));
    second.drop();
  });

  test('a run paused by a client that dropped waits; a new client resumes it and gets its training:done', async () => {
    const first = await Client.open(server);
    const { id: datasetId } = await first.call<{ id: string }>('datasets:open', { source: { kind: 'mnist', limit: 1000 } });
    // long enough (20 epochs of ~60 ms steps) that the pause lands mid-run
    const { runId } = await first.call<{ runId: string }>('training:start', { ...longRun(datasetId), epochs: 20, batchSize: 256 });
    await first.call<RunInfo>('training:pause', { runId });
    first.drop();

    await sleep(200);
    const second = await Client.open(server);
    // a run paused while it was still starting (its dataset and network being set up: longer on a loaded
    // machine) says 'starting' until it reaches the pause
    let held = await second.call<RunInfo>('training:status', { runId });
    for (const deadline = Date.now() + 30_000; held.state === 'starting' && Date.now() < deadline; await sleep(50)) {
      held = await second.call<RunInfo>('training:status', { runId });
    }
    assert.equal(held.state, 'paused');
    await sleep(200);
    const stillHeld = await second.call<RunInfo>('training:status', { runId });
    assert.equal(stillHeld.state, 'paused');
    assert.equal(stillHeld.lastStep?.globalStep, held.lastStep?.globalStep, 'a paused run does not train');
    await second.call<RunInfo>('training:resume', { runId });
    const done = await second.doneOf(runId);
    assert.equal(done.status, 'completed', done.message);
    assert.equal(done.history.length, 20);
    second.drop();
  });

  test('many clients dropping at once leave the server answering', async () => {
    const clients = await Promise.all(Array.from({ length: 8 }, () => Client.open(server)));
    await Promise.all(clients.map((client) => client.call('devices:list')));
    for (const client of clients) client.drop();
    await sleep(100);
    const survivor = await Client.open(server);
    const devices = await survivor.call<{ kind: string }[]>('devices:list');
    assert.ok(devices.some((device) => device.kind === 'cpu'));
    survivor.drop();
  });
});
