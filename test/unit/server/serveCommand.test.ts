// `nnstudio serve`'s bind: 127.0.0.1 unless --host says otherwise, and a warning on stderr saying what a
// bind beyond this machine exposes and what to use instead; --allow-host reaches the server's Host check.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { defaultHost, exposureWarning, serveCommand } from '../../../app/cli/commands/serve';
import type { RunningServer } from '../../../app/server';
import { within } from '../api/helpers';
import { request } from './support';

let staticDir: string;
before(() => {
  staticDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-serve-command-'));
  fs.writeFileSync(path.join(staticDir, 'index.html'), '<!doctype html><title>NN Studio</title>');
});
after(() => fs.rmSync(staticDir, { recursive: true, force: true }));

/** Runs `serve ARGS` until the printed URL, then stops it: what it printed, on which stream. */
async function runServe(args: string[], whileRunning?: (url: URL) => Promise<void>): Promise<{ out: string; err: string; url: URL }> {
  let out = '';
  let err = '';
  const stop = new AbortController();
  const running = serveCommand({ staticDir, out: (text) => (out += text), err: (text) => (err += text), stop: stop.signal }).parseAsync(args, { from: 'user' });
  let url: URL | undefined;
  try {
    await within(
      (async () => {
        while (!/press Ctrl-C/.test(out)) await new Promise((resolve) => setTimeout(resolve, 5));
      })(),
      10_000,
      'serve to start',
    );
    url = new URL(/open (\S+)/.exec(out)?.[1] ?? '');
    await whileRunning?.(url);
  } finally {
    stop.abort();
    await within(running, 10_000, 'serve to stop');
  }
  return { out, err, url };
}

describe('serve binds to this machine unless told otherwise', () => {
  test('--host defaults to 127.0.0.1, and the default run binds there and warns of nothing', async () => {
    assert.equal(defaultHost, '127.0.0.1');
    const hostOption = serveCommand().options.find((option) => option.long === '--host');
    assert.equal(hostOption?.defaultValue, '127.0.0.1');
    const { out, err, url } = await runServe(['--port', '0']);
    assert.equal(url.hostname, '127.0.0.1');
    assert.ok(url.searchParams.get('token'), 'the URL carries the token');
    assert.equal(err, '');
    assert.match(out, /stopping…/);
  });

  test('a loopback --host warns of nothing', () => {
    for (const host of ['127.0.0.1', '127.0.0.2', '::1', 'localhost']) assert.equal(exposureWarning(host, 7860), undefined, host);
  });

  test('a bind beyond loopback warns what it exposes and what to use instead', () => {
    const warning = exposureWarning('0.0.0.0', 7860) ?? '';
    assert.match(warning, /^warning: listening on every network interface \(0\.0\.0\.0\), not only on this machine/);
    assert.match(warning, /read and write any file this user can/);
    assert.match(warning, /unencrypted/);
    assert.match(warning, /ssh -L 7860:127\.0\.0\.1:7860/);
    assert.match(warning, /firewall/);
    assert.match(exposureWarning('192.168.1.20', 80) ?? '', /^warning: listening on 192\.168\.1\.20,/);
  });

  test('--host 0.0.0.0 prints the warning on stderr, the URL on stdout', async () => {
    const { out, err } = await runServe(['--host', '0.0.0.0', '--port', '0']);
    assert.match(out, /NN Studio is running: open http:\/\/0\.0\.0\.0:\d+\/\?token=/);
    assert.match(err, /^warning: listening on every network interface/);
    assert.doesNotMatch(out, /warning/);
  });

  test('--allow-host (repeatable) reaches the Host check', async () => {
    await runServe(['--port', '0', '--allow-host', 'localhost:9000', '--allow-host', 'studio.lan'], async (url) => {
      const token = url.searchParams.get('token') ?? '';
      const server = { host: url.hostname, port: Number(url.port) } as RunningServer;
      const status = async (host: string) => (await request(server, '/', { headers: { Host: host, Authorization: `Bearer ${token}` } })).status;
      assert.equal(await status('localhost:9000'), 200);
      assert.equal(await status(`studio.lan:${url.port}`), 200);
      assert.equal(await status('studio.lan:9000'), 421);
    });
  });
});

describe('serve opens a project or the last session', () => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-serve-project-'));
  after(() => fs.rmSync(folder, { recursive: true, force: true }));
  const iris = path.resolve(__dirname, '..', '..', '..', '..', 'resources', 'samples', 'iris.csv');
  const project = path.join(folder, 'study.nnstudio');
  fs.writeFileSync(project, JSON.stringify({
    format: 'nnstudio-project', version: 1, savedAt: '2026-11-25T00:00:00Z',
    datasets: [{ id: 'dataset-7', name: 'iris.csv', source: { kind: 'csv', path: iris } }, { id: 'dataset-8', name: 'gone.csv', source: { kind: 'csv', path: path.join(folder, 'gone.csv') } }],
    workspace: { datasetId: 'dataset-7' }, runs: [],
  }));

  test('--project opens it and says what came back, naming a data file that is gone', async () => {
    const { out, err } = await runServe(['--port', '0', '--project', project]);
    assert.match(out, new RegExp(`^opened the project ${project.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(1 dataset, 0 models\\)\\n  note: gone\\.csv was not opened: .*gone\\.csv`));
    assert.equal(err, '');
  });

  test('the next start restores the last session; --no-last-session starts empty', async () => {
    const restored = await runServe(['--port', '0']);
    assert.match(restored.out, /^restored the last session from .*last-session\.nnstudio \(1 dataset, 0 models\)\n/);
    const fresh = await runServe(['--port', '0', '--no-last-session']);
    assert.doesNotMatch(fresh.out, /restored|opened/);
  });

  test('a project that cannot be opened is a warning; the server starts with an empty session', async () => {
    const { out, err } = await runServe(['--port', '0', '--project', path.join(folder, 'missing.nnstudio'), '--no-last-session']);
    assert.match(err, /^warning: cannot open the project .*missing\.nnstudio: there is no such file; starting with an empty session\n$/);
    assert.match(out, /NN Studio is running/);
  });
});
