#!/usr/bin/env node
// `npm start`: builds what is out of date (TypeScript, the renderer), then opens the desktop app in
// Electron. The electron package installs no binary (it has no install script): its first use downloads
// one. When that binary cannot be had (offline installs, a mirror-less network) or there is no display,
// this says so in one line and starts `nnstudio serve` instead, which prints the URL to open.
//   npm start [-- --no-build] [-- --serve] [-- <serve options, e.g. --port 0>]
'use strict';
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
/** After this long without an answer, the first start is downloading Electron: say so. */
const downloadNoticeMs = 3000;
/** A firewall that drops packets must not keep the user waiting forever. */
const downloadTimeoutMs = 5 * 60 * 1000;

// ---- building ----

/** The newest modification time of the files under `entries` (folders walked, node_modules skipped). */
function newestMtime(entries) {
  let newest = 0;
  const visit = (entry) => {
    let stat;
    try {
      stat = fs.statSync(entry);
    } catch {
      return;
    }
    if (stat.isDirectory()) {
      for (const name of fs.readdirSync(entry)) if (name !== 'node_modules') visit(path.join(entry, name));
    } else {
      newest = Math.max(newest, stat.mtimeMs);
    }
  };
  for (const entry of entries) visit(entry);
  return newest;
}

/** True when `output` is missing or older than any of `sources`. */
function isStale(output, sources) {
  let built;
  try {
    built = fs.statSync(output).mtimeMs;
  } catch {
    return true;
  }
  return newestMtime(sources) > built;
}

const builds = [
  {
    script: 'build:ts',
    output: path.join(root, 'dist', 'app', 'electron', 'main.js'),
    sources: ['app', 'tsconfig.json'].map((entry) => path.join(root, entry)),
  },
  {
    script: 'build:renderer',
    output: path.join(root, 'dist', 'renderer', 'index.html'),
    sources: ['renderer', path.join('app', 'api', 'types.ts')].map((entry) => path.join(root, entry)),
  },
];

function buildIfNeeded() {
  for (const build of builds) {
    if (!isStale(build.output, build.sources)) continue;
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const result = spawnSync(npm, ['run', build.script], { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
    if (result.status !== 0) {
      process.stderr.write(`nnstudio: npm run ${build.script} failed; fix the build and run npm start again\n`);
      process.exit(result.status ?? 1);
    }
  }
}

// ---- finding Electron ----

/** Why Electron cannot open a window here, or undefined when it may. */
function noDisplayReason() {
  if (process.platform !== 'linux') return undefined;
  return process.env.DISPLAY || process.env.WAYLAND_DISPLAY ? undefined : 'there is no display (DISPLAY and WAYLAND_DISPLAY are unset)';
}

/**
 * The Electron executable, asked of the electron package itself in a child process (its first use
 * downloads the binary; the child's output is kept, so a failure here prints nothing but our one line).
 * Resolves to { executable } or { reason }.
 */
function findElectron() {
  try {
    require.resolve('electron/package.json', { paths: [root] });
  } catch {
    return Promise.resolve({ reason: 'the electron package is not installed' });
  }
  return new Promise((resolve) => {
    const env = { ...process.env };
    delete env.ELECTRON_RUN_AS_NODE;
    const child = spawn(process.execPath, ['-e', "process.stdout.write(String(require('electron')))"], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.resume();
    const notice = setTimeout(() => process.stdout.write('nnstudio: downloading the Electron binary (first start only)…\n'), downloadNoticeMs);
    const timeout = setTimeout(() => child.kill(), downloadTimeoutMs);
    child.on('error', (error) => finish({ reason: `the electron package could not be run (${error.message})` }));
    child.on('close', (code) => {
      if (code !== 0) return finish({ reason: 'the Electron binary is not installed and could not be downloaded' });
      const executable = stdout.trim();
      if (!executable || !fs.existsSync(executable)) return finish({ reason: `the Electron binary is missing (${executable || 'no path'})` });
      finish({ executable });
    });
    let done = false;
    function finish(answer) {
      if (done) return;
      done = true;
      clearTimeout(notice);
      clearTimeout(timeout);
      resolve(answer);
    }
  });
}

// ---- running ----

/** Runs `command` with our stdio, passes Ctrl-C and SIGTERM on, and exits with its code. */
function runAndExit(command, args, env = process.env) {
  const child = spawn(command, args, { cwd: root, env, stdio: 'inherit' });
  const forward = (signal) => () => child.kill(signal);
  process.on('SIGINT', forward('SIGINT'));
  process.on('SIGTERM', forward('SIGTERM'));
  child.on('error', (error) => {
    process.stderr.write(`nnstudio: could not start ${path.basename(command)}: ${error.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

function serve(reason, serveArgs) {
  process.stderr.write(`nnstudio: ${reason}; starting \`nnstudio serve\` instead: open the URL it prints in a browser\n`);
  runAndExit(process.execPath, [path.join(root, 'bin', 'nnstudio.js'), 'serve', ...serveArgs]);
}

async function main(argv) {
  const flags = new Set(argv.filter((arg) => arg === '--no-build' || arg === '--serve'));
  const serveArgs = argv.filter((arg) => !flags.has(arg));
  if (!flags.has('--no-build')) buildIfNeeded();
  if (flags.has('--serve')) return serve('--serve was given', serveArgs);
  const noDisplay = noDisplayReason();
  if (noDisplay) return serve(noDisplay, serveArgs);
  const electron = await findElectron();
  if (electron.reason) return serve(electron.reason, serveArgs);
  const env = { ...process.env };
  delete env.ELECTRON_RUN_AS_NODE;
  // package.json's "main" is dist/app/electron/main.js.
  runAndExit(electron.executable, [root], env);
}

if (require.main === module) void main(process.argv.slice(2));

module.exports = { isStale, noDisplayReason, findElectron };
