// `npm start` (scripts/start.js) where Electron cannot run: one line says why, then `nnstudio serve`
// starts and prints the URL to open. Electron's binary is made "missing" with ELECTRON_OVERRIDE_DIST_PATH
// (the electron package honours it), so the test never downloads anything, online or not.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const repoRoot = path.resolve(__dirname, '..', '..', '..', '..');
const startScript = path.join(repoRoot, 'scripts', 'start.js');
const built = fs.existsSync(path.join(repoRoot, 'dist', 'renderer', 'index.html'));
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-start-test-'));
after(() => fs.rmSync(scratch, { recursive: true, force: true }));

// eslint-disable-next-line @typescript-eslint/no-require-imports
const start = require(startScript) as { isStale(output: string, sources: string[]): boolean; noDisplayReason(): string | undefined };

interface Started {
  lines: string[];
  url: string;
  exitCode: Promise<number | null>;
  stop(): void;
}

/** Runs start.js until serve prints its URL (bounded), keeping every line of stdout and stderr. */
function runStart(env: NodeJS.ProcessEnv): Promise<Started> {
  const child = spawn(process.execPath, [startScript, '--no-build', '--port', '0'], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const exitCode = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no serve URL within 30 s; output:\n${lines.join('\n')}`));
    }, 30_000);
    const read = (chunk: Buffer) => {
      lines.push(...chunk.toString().split('\n').filter((line) => line.length > 0));
      const url = lines.map((line) => /NN Studio is running: open (\S+)/.exec(line)?.[1]).find(Boolean);
      if (url) {
        clearTimeout(timer);
        resolve({ lines, url, exitCode, stop: () => child.kill('SIGTERM') });
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`start.js exited (${code}) before serve printed its URL:\n${lines.join('\n')}`));
    });
  });
}

function baseEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.ELECTRON_RUN_AS_NODE;
  return env;
}

describe('npm start falls back to serve', { skip: built ? false : 'dist/renderer is not built (npm run build:renderer)' }, () => {
  test('when the Electron binary is missing: one line, then the URL with the token, and the page answers', async () => {
    const started = await runStart({ ...baseEnv(), DISPLAY: ':99', ELECTRON_OVERRIDE_DIST_PATH: path.join(scratch, 'no-electron-here') });
    try {
      const notices = started.lines.filter((line) => line.startsWith('nnstudio:'));
      assert.equal(notices.length, 1, started.lines.join('\n'));
      assert.match(notices[0], /^nnstudio: the Electron binary is missing \(.*no-electron-here.*\); starting `nnstudio serve` instead: open the URL it prints in a browser$/);
      assert.match(started.url, /^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+/);
      assert.equal((await fetch(started.url)).status, 200);
    } finally {
      started.stop();
    }
    assert.equal(await started.exitCode, 0, 'Ctrl-C / SIGTERM reaches serve, which stops cleanly');
  });

  test('when there is no display (a headless server): one line, then the URL', { skip: process.platform !== 'linux' && 'Linux only' }, async () => {
    const env = baseEnv();
    delete env.DISPLAY;
    delete env.WAYLAND_DISPLAY;
    const started = await runStart(env);
    try {
      const notices = started.lines.filter((line) => line.startsWith('nnstudio:'));
      assert.deepEqual(notices, [
        'nnstudio: there is no display (DISPLAY and WAYLAND_DISPLAY are unset); starting `nnstudio serve` instead: open the URL it prints in a browser',
      ]);
    } finally {
      started.stop();
    }
    await started.exitCode;
  });
});

describe('what npm start rebuilds', () => {
  test('an output is stale when missing or older than a source', () => {
    const source = path.join(scratch, 'src');
    fs.mkdirSync(path.join(source, 'deep'), { recursive: true });
    const file = path.join(source, 'deep', 'a.ts');
    const output = path.join(scratch, 'out.js');
    fs.writeFileSync(file, '');
    assert.equal(start.isStale(output, [source]), true, 'missing');
    fs.writeFileSync(output, '');
    fs.utimesSync(file, new Date(1000_000), new Date(1000_000));
    fs.utimesSync(output, new Date(2000_000), new Date(2000_000));
    assert.equal(start.isStale(output, [source]), false, 'newer than its sources');
    fs.utimesSync(file, new Date(3000_000), new Date(3000_000));
    assert.equal(start.isStale(output, [source]), true, 'a source changed since');
  });
});
