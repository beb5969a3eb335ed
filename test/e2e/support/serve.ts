// `nnstudio serve` as the user runs it: a child process on a free port, whose printed URL (token included)
// the browser opens. Its output is kept for the failure report; close() always ends it, by SIGKILL if
// SIGTERM is not enough.
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export const repoRoot = path.resolve(__dirname, '..', '..', '..', '..');
const bin = path.join(repoRoot, 'bin', 'nnstudio.js');

export interface ServeProcess {
  /** The URL `serve` printed: http://127.0.0.1:<port>/?token=… */
  browserUrl: string;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  close(): Promise<void>;
}

/** Every child still running: killed if the test process exits without closing them (no orphaned servers). */
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

export async function startServeProcess(startTimeoutMs = 30_000): Promise<ServeProcess> {
  // The run history goes to a temporary folder: each server starts with none, and the user's stays untouched.
  const ownDataDir = !process.env.NNSTUDIO_DATA_DIR;
  const dataDir = process.env.NNSTUDIO_DATA_DIR || fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-e2e-data-'));
  const child = spawn(process.execPath, [bin, 'serve', '--port', '0'], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NNSTUDIO_DATA_DIR: dataDir },
  });
  children.add(child);
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => {
    children.delete(child);
    if (ownDataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const close = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(killer);
  };

  const browserUrl = await new Promise<string>((resolve, reject) => {
    const fail = (why: string) => {
      clearTimeout(timer);
      void close();
      reject(new Error(`nnstudio serve ${why}; its output:\n${output}`));
    };
    const timer = setTimeout(() => fail(`printed no URL within ${startTimeoutMs / 1000} s`), startTimeoutMs);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const url = /open (http:\/\/\S+)/.exec(output)?.[1];
      if (url) {
        clearTimeout(timer);
        resolve(url);
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', (error) => fail(`could not start: ${error.message}`));
    child.once('exit', (code, signal) => fail(`exited (${signal ?? `code ${code}`}) before printing its URL`));
  });
  return { browserUrl, output: () => output, close };
}
