// The C course tool's command line (DESIGN §5): `--train --layers 30,60,10,1 --dataset f.csv
// --batch_number 10 --learning_rate 0.01 --model m` and `--test --dataset f.csv --model m`.
// Such an argument list is rewritten into the equivalent `train` / `eval` command.

const renamed: Record<string, string> = {
  '--dataset': '--data',
  '--batch_number': '--batch-size',
  '--learning_rate': '--lr',
};

/** Returns the rewritten arguments, or undefined when `args` is not in the course tool's form. */
export function translateCourseArgs(args: readonly string[]): string[] | undefined {
  const first = args[0];
  if (first === undefined || !first.startsWith('--')) return undefined;
  const training = args.includes('--train');
  const testing = args.includes('--test');
  if (!training && !testing) return undefined;
  if (training && testing) throw new Error('give either --train or --test, not both');
  const out: string[] = [training ? 'train' : 'eval'];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--train' || arg === '--test') continue;
    if (arg === '--verbose') {
      if (training) out.push('--verbose');
      continue;
    }
    if (arg === '--model') {
      out.push(training ? '--out' : '--model');
      continue;
    }
    out.push(renamed[arg] ?? arg);
  }
  return out;
}
