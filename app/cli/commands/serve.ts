// `nnstudio serve`: the desktop app's UI in a browser. Serves the built renderer (dist/renderer) and the UI
// API over one WebSocket, behind a token printed in the URL; runs until Ctrl-C. It binds to 127.0.0.1
// unless --host names another address, and then says aloud what that exposes.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { createApi, type Api } from '../../api/session';
import type { ProjectOpened } from '../../api/types';
import { startServer, type RunningServer } from '../../server';
import { isLoopback, isWildcard } from '../../server/guards';
import { nonNegativeInteger } from '../options';

/** dist/renderer, next to dist/app where this file runs from. */
export const rendererDir = path.resolve(__dirname, '..', '..', '..', 'renderer');

export const defaultHost = '127.0.0.1';

interface ServeOptions {
  port: number;
  host: string;
  allowHost: string[];
  project?: string;
  lastSession: boolean;
}

/** Starts the server on the built renderer; throws one line when it is not built. */
export async function startServe(options: { port?: number; host?: string; allowHosts?: string[]; staticDir?: string; api?: Api } = {}): Promise<RunningServer> {
  const staticDir = options.staticDir ?? rendererDir;
  if (!fs.existsSync(path.join(staticDir, 'index.html'))) {
    throw new Error(`the UI is not built (${path.relative(process.cwd(), staticDir) || staticDir} has no index.html): run npm install (or npm run build:renderer)`);
  }
  try {
    return await startServer({ host: options.host ?? defaultHost, port: options.port ?? 0, allowHosts: options.allowHosts, staticDir, api: options.api });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new Error(`port ${options.port} is in use: choose another with --port (0: any free port)`);
    throw error;
  }
}

/** What a project or the last session brought back, in lines for the terminal. */
export function describeOpened(what: string, opened: ProjectOpened): string {
  const counts = `${opened.datasets.length} dataset${opened.datasets.length === 1 ? '' : 's'}, ${opened.models} model${opened.models === 1 ? '' : 's'}`;
  return [`${what} ${opened.path} (${counts})`, ...opened.notes.map((note) => `  note: ${note}`)].join('\n');
}

/** --project, else the last session (unless --no-last-session): opened into the new session; a failure is said, not fatal. */
async function openAtStart(api: Api, options: ServeOptions, out: (text: string) => void, err: (text: string) => void): Promise<void> {
  try {
    if (options.project) {
      const answer = await api.dispatch('projects:open', { path: options.project });
      if (answer.error) throw new Error(answer.error.message);
      out(`${describeOpened('opened the project', answer.result as ProjectOpened)}\n`);
    } else if (options.lastSession) {
      const opened = await api.openLastSession();
      if (opened) out(`${describeOpened('restored the last session from', opened)}\n`);
    }
  } catch (error) {
    err(`warning: ${(error as Error).message}; starting with an empty session\n`);
  }
}

/** What a bind beyond loopback exposes and how to avoid it, or undefined for a loopback bind. */
export function exposureWarning(boundAddress: string, port: number): string | undefined {
  if (isLoopback(boundAddress)) return undefined;
  const where = isWildcard(boundAddress) ? `every network interface (${boundAddress})` : boundAddress;
  return [
    `warning: listening on ${where}, not only on this machine.`,
    '  Anyone who can reach this port and has the URL (it carries the token) can use NN Studio as you: train,',
    '  and read and write any file this user can (datasets and models are opened and saved by path).',
    '  The connection is plain HTTP: the token and your data cross the network unencrypted.',
    `  Prefer the default (127.0.0.1) with an SSH tunnel (ssh -L ${port}:127.0.0.1:${port} <this host>), or allow`,
    '  only trusted machines to this port with a firewall.',
  ].join('\n');
}

function port(value: string): number {
  const number = nonNegativeInteger('--port')(value);
  if (number > 65535) throw new InvalidArgumentError(`--port must be at most 65535, got "${value}"`);
  return number;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** What tests replace: the folder served, where the lines go, and a stop other than Ctrl-C. */
export interface ServeIo {
  staticDir?: string;
  out?: (text: string) => void;
  err?: (text: string) => void;
  stop?: AbortSignal;
}

export function serveCommand(io: ServeIo = {}): Command {
  const out = io.out ?? ((text: string) => void process.stdout.write(text));
  const err = io.err ?? ((text: string) => void process.stderr.write(text));
  return new Command('serve')
    .description('open the NN Studio UI in a browser (binds to this machine only unless --host says otherwise)')
    .option('--port <n>', 'port to listen on (0: any free port)', port, 7860)
    .option('--host <address>', 'address to bind; anything but loopback exposes the app to the network (a warning says what)', defaultHost)
    .option(
      '--allow-host <host[:port]>',
      'also answer requests addressed to this name (repeatable; with a port: e.g. localhost:9000 for a tunnel on another local port)',
      collect,
      [],
    )
    .option('--project <file>', 'open this project (.nnstudio; a name alone is looked for in the projects folder)')
    .option('--no-last-session', 'start with an empty session instead of the last one')
    .action(async (options: ServeOptions) => {
      // The session keeps itself in the data folder, so the next start finds it.
      const api = createApi({ keepLastSession: true });
      let server: RunningServer;
      try {
        server = await startServe({ port: options.port, host: options.host, allowHosts: options.allowHost, staticDir: io.staticDir, api });
      } catch (error) {
        await api.close();
        throw error;
      }
      await openAtStart(api, options, out, err);
      out(`NN Studio is running: open ${server.browserUrl}\n`);
      const warning = exposureWarning(server.host, server.port);
      if (warning) err(`${warning}\n`);
      out('press Ctrl-C to stop\n');
      await new Promise<void>((resolve) => {
        const stop = () => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          io.stop?.removeEventListener('abort', stop);
          out('stopping…\n');
          server.close().then(() => api.close()).then(resolve, resolve);
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
        io.stop?.addEventListener('abort', stop);
      });
    });
}
