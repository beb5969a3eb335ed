// The `nnstudio` command line. Each command lives in commands/; all of them call app/services.
import { Command, CommanderError } from 'commander';
import { benchCommand } from './commands/bench';
import { devicesCommand } from './commands/devices';
import { evalCommand } from './commands/evaluate';
import { exportCommand } from './commands/export';
import { importCommand } from './commands/import';
import { inspectCommand } from './commands/inspect';
import { predictCommand } from './commands/predict';
import { runsCommand } from './commands/runs';
import { searchCommand } from './commands/search';
import { serveCommand } from './commands/serve';
import { trainCommand } from './commands/train';
import { excessArgumentHint } from './argumentHint';
import { translateCourseArgs } from './courseFlags';

export function buildProgram(): Command {
  const program = new Command('nnstudio')
    .description('NN Studio: train, evaluate and use neural networks on CSV, IDX and MNIST data')
    .version(require('../../../package.json').version)
    .showSuggestionAfterError()
    .exitOverride();
  for (const command of [
    trainCommand(), searchCommand(), evalCommand(), predictCommand(), inspectCommand(), exportCommand(), importCommand(), runsCommand(), devicesCommand(), serveCommand(), benchCommand(),
  ]) {
    program.addCommand(command.exitOverride());
  }
  return program;
}

/** One line for the user: the error's own message, never a stack trace (NNSTUDIO_DEBUG=1 shows it). */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message.split('\n')[0];
  return String(error);
}

export async function main(argv: readonly string[] = process.argv.slice(2)): Promise<number> {
  const program = buildProgram();
  const args = translateCourseArgs(argv) ?? [...argv];
  try {
    await program.parseAsync(args, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander has already printed its message (or the help / version text).
      const hint = error.code === 'commander.excessArguments' ? excessArgumentHint(program, args) : undefined;
      if (hint) process.stderr.write(`${hint}\n`);
      return error.exitCode;
    }
    if (process.env.NNSTUDIO_DEBUG) console.error(error);
    process.stderr.write(`nnstudio: ${describeError(error)}\n`);
    return 1;
  }
}

if (require.main === module) {
  main().then((code) => {
    process.exitCode = code;
  });
}
