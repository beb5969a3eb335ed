// `nnstudio serve`: the desktop app's UI in a browser. Serves the built renderer (dist/renderer) and the UI
// API over one WebSocket, behind a token printed in the URL; runs until Ctrl-C.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { startServer, type RunningServer } from '../../server';
import { nonNegativeInteger } from '../options';

/** dist/renderer, next to dist/app where this file runs from. */
export const rendererDir = path.resolve(__dirname, '..', '..', '..', 'renderer');

interface ServeOptions {
  port: number;
  host: string;
}

/** Starts the server on the built renderer; throws one line when it is not built. */
export async function startServe(options: { port?: number; host?: string; staticDir?: string } = {}): Promise<RunningServer> {
  const staticDir = options.staticDir ?? rendererDir;
  if (!fs.existsSync(path.join(staticDir, 'index.html'))) {
    throw new Error(`the UI is not built (${path.relative(process.cwd(), staticDir) || staticDir} has no index.html): run npm install (or npm run build:renderer)`);
  }
  try {
    return await startServer({ host: options.host ?? '127.0.0.1', port: options.port ?? 0, staticDir });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new Error(`port ${options.port} is in use: choose another with --port (0: any free port)`);
    throw error;
  }
}

function port(value: string): number {
  const number = nonNegativeInteger('--port')(value);
  if (number > 65535) throw new InvalidArgumentError(`--port must be at most 65535, got "${value}"`);
  return number;
}

export function serveCommand(): Command {
  return new Command('serve')
    .description('open the NN Studio UI in a browser (binds to this machine only unless --host says otherwise)')
    .option('--port <n>', 'port to listen on (0: any free port)', port, 7860)
    .option('--host <address>', 'address to bind', '127.0.0.1')
    .action(async (options: ServeOptions) => {
      const server = await startServe(options);
      process.stdout.write(`NN Studio is running: open ${server.browserUrl}\n`);
      if (server.host !== '127.0.0.1' && server.host !== '::1') {
        process.stdout.write('warning: listening beyond this machine; anyone with the URL (it carries the token) can use it\n');
      }
      process.stdout.write('press Ctrl-C to stop\n');
      await new Promise<void>((resolve) => {
        const stop = () => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          process.stdout.write('stopping…\n');
          server.close().then(resolve, resolve);
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
    });
}
