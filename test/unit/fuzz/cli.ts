// `npm run fuzz`: every reader, >= 10 000 mutated inputs each by default; prints inputs, accepted, rejected
// (the documented error), failures and seconds per reader, every failure with its replay command; exit 1 on
// any failure. `--case N` replays one case and prints its input and outcome.
import { caseRandom } from './random';
import { formatFailures, fuzzReader, type ReaderReport } from './runner';
import { fuzzTarget, fuzzTargets } from './targets';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

interface CliOptions {
  readers: string[];
  seed: number;
  count: number;
  start: number;
  replay?: number;
  timeLimitMs: number;
}

function parseArguments(argv: readonly string[]): CliOptions {
  const options: CliOptions = { readers: fuzzTargets.map((target) => target.name), seed: 1, count: 10_000, start: 0, timeLimitMs: 2000 };
  for (let i = 0; i < argv.length; i++) {
    const value = () => {
      const next = argv[++i];
      if (next === undefined) throw new Error(`${argv[i - 1]} needs a value`);
      return next;
    };
    const integer = (text: string) => {
      if (!/^\d+$/.test(text)) throw new Error(`${argv[i - 1]} must be a non-negative integer, got "${text}"`);
      return Number(text);
    };
    switch (argv[i]) {
      case '--reader':
      case '--readers':
        options.readers = value().split(',');
        for (const reader of options.readers) fuzzTarget(reader);
        break;
      case '--seed': {
        const text = value();
        options.seed = text === 'random' ? Math.floor(Math.random() * 2 ** 31) : integer(text);
        break;
      }
      case '--count': options.count = integer(value()); break;
      case '--start': options.start = integer(value()); break;
      case '--case': options.replay = integer(value()); break;
      case '--time-limit': options.timeLimitMs = integer(value()); break;
      case '--help':
        console.log('npm run fuzz -- [--reader csv,idx,...] [--seed N|random] [--count N] [--start N] [--case N] [--time-limit MS]');
        process.exit(0);
        break;
      default:
        throw new Error(`unknown argument ${argv[i]} (try --help)`);
    }
  }
  return options;
}

async function replay(reader: string, seed: number, index: number): Promise<boolean> {
  const fuzzCase = fuzzTarget(reader).makeCase(caseRandom(seed, reader, index));
  console.log(`${reader} seed=${seed} case=${index}\n  input: ${fuzzCase.description}`);
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-fuzz-replay-'));
  try {
    console.log(`  outcome: ${await fuzzCase.run(folder)}`);
    return true;
  } catch (error) {
    console.log(`  FAILED: ${(error as Error).stack ?? String(error)}`);
    return false;
  } finally {
    console.log(`  files: ${folder}`);
  }
}

function row(cells: (string | number)[]): string {
  return cells.map((cell, i) => (i === 0 ? String(cell).padEnd(11) : String(cell).padStart(9))).join(' ');
}

async function main(): Promise<number> {
  const options = parseArguments(process.argv.slice(2));
  if (options.replay !== undefined) {
    let ok = true;
    for (const reader of options.readers) ok = (await replay(reader, options.seed, options.replay)) && ok;
    return ok ? 0 : 1;
  }
  console.log(`fuzzing ${options.readers.length} readers, ${options.count} inputs each, seed ${options.seed}, ${options.timeLimitMs} ms per input`);
  console.log(row(['reader', 'inputs', 'accepted', 'rejected', 'failures', 'seconds']));
  const reports: ReaderReport[] = [];
  for (const reader of options.readers) {
    const report = await fuzzReader(reader, { seed: options.seed, count: options.count, start: options.start, timeLimitMs: options.timeLimitMs });
    reports.push(report);
    console.log(row([reader, report.inputs, report.accepted, report.rejected, report.failures.length, report.seconds.toFixed(1)]));
  }
  const failed = reports.filter((report) => report.failures.length > 0);
  for (const report of failed) console.log(formatFailures(report));
  const total = reports.reduce((sum, report) => sum + report.failures.length, 0);
  console.log(total === 0 ? 'no failures' : `${total} failure(s)`);
  return total === 0 ? 0 : 1;
}

main().then((code) => process.exit(code), (error) => {
  console.error((error as Error).message);
  process.exit(2);
});
