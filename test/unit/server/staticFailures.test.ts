// A static file that cannot be read is the server's failure, not the client's: `serve` answers 500 (or cuts
// the connection once the answer has begun) and logs what failed with the request's path (never its token),
// through the logger it was given. A missing file stays a plain 404 with nothing logged.
import { after, before, describe, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { startServer, type RunningServer } from '../../../app/server';
import { captureLog, within } from '../api/helpers';
// The module object itself (an `import * as` namespace is a copy whose functions cannot be replaced).
import fsModule = require('node:fs');
import { request, tokenQuery } from './support';

const permissionDenied = (file: string) => Object.assign(new Error(`EACCES: permission denied, stat '${file}'`), { code: 'EACCES' });

/** GET that resolves with the status, or with 'cut' when the connection ends mid-answer. */
function getOrCut(server: RunningServer, requestPath: string): Promise<number | 'cut'> {
  return within(
    new Promise((resolve) => {
      const outgoing = http.get({ host: server.host, port: server.port, path: requestPath, agent: false }, (response) => {
        response.on('data', () => {});
        response.on('end', () => resolve(response.statusCode ?? 0));
        response.on('error', () => resolve('cut'));
        response.on('aborted', () => resolve('cut'));
      });
      outgoing.on('error', () => resolve('cut'));
    }),
    5000,
    `GET ${requestPath}`,
  );
}

describe('serve: static files that fail', () => {
  const log = captureLog();
  let staticDir: string;
  let server: RunningServer;
  before(async () => {
    staticDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-static-'));
    for (const name of ['index.html', 'locked.js', 'broken.js']) fs.writeFileSync(path.join(staticDir, name), `// ${name}\n`);
    server = await startServer({ staticDir, logger: log.logger });
  });
  after(async () => {
    mock.restoreAll();
    await server.close();
    fs.rmSync(staticDir, { recursive: true, force: true });
  });

  test('a file the server may not read: 500, logged with its path and the reason, not the token', async () => {
    const realStat = fs.promises.stat.bind(fs.promises);
    const stat = mock.method(fs.promises, 'stat', async (file: fs.PathLike) => {
      if (String(file).endsWith('locked.js')) throw permissionDenied(String(file));
      return realStat(file);
    });
    try {
      const reply = await request(server, `/locked.js${tokenQuery(server)}`);
      assert.equal(reply.status, 500);
    } finally {
      stat.mock.restore();
    }
    assert.match(log.text(), /^error: serve: answering GET \/locked\.js: EACCES: permission denied/m);
    assert.ok(!log.text().includes(server.token), 'the token stays out of the log');
  });

  test('a read that fails once the answer began: the connection is cut, and the failure logged with the file', async () => {
    const realCreateReadStream = fsModule.createReadStream;
    const opened = mock.method(fsModule, 'createReadStream', (file: fs.PathLike, options?: unknown) => {
      if (!String(file).endsWith('broken.js')) return realCreateReadStream(file, options as never);
      const failing = new PassThrough();
      setImmediate(() => failing.destroy(Object.assign(new Error('EIO: i/o error, read'), { code: 'EIO' })));
      return failing as unknown as fs.ReadStream;
    });
    try {
      assert.equal(await getOrCut(server, `/broken.js${tokenQuery(server)}`), 'cut');
    } finally {
      opened.mock.restore();
    }
    assert.match(log.text(), new RegExp(`^error: serve: reading ${path.join(fs.realpathSync(staticDir), 'broken.js').replace(/[.\\/]/g, '\\$&')} for GET /broken\\.js: EIO: i/o error, read`, 'm'));
  });

  test('a missing file is a 404 and nothing to log', async () => {
    const before = log.entries.length;
    const reply = await request(server, `/no-such-file.js${tokenQuery(server)}`);
    assert.equal(reply.status, 404);
    assert.equal(log.entries.length, before);
  });
});
