// Files go to `nnstudio` as options (--data, --model), never as bare arguments. Commander refuses a bare one
// with "too many arguments for 'train'"; this says which option the file was probably meant for.
import type { Command, Option } from 'commander';

const modelExtensions = ['.safetensors', '.m'];

/** Where the user gave a command bare arguments (positions in `args`; option values skipped). */
export function bareArgumentPositions(command: Command, args: readonly string[]): number[] {
  const options: readonly Option[] = command.options;
  const takesValue = (token: string) => options.some((option) => (option.long === token || option.short === token) && (option.required || option.optional));
  const bare: number[] = [];
  for (let i = 0; i < args.length; i++) {
    const token = args[i];
    if (token === '--') return [...bare, ...args.slice(i + 1).map((_, offset) => i + 1 + offset)];
    if (token.startsWith('-')) {
      if (!token.includes('=') && takesValue(token)) i++;
      continue;
    }
    bare.push(i);
  }
  return bare;
}

/** The command line again with each bare file behind the option it fits (--model for a model file, else --data), or undefined. */
export function excessArgumentHint(program: Command, argv: readonly string[]): string | undefined {
  const command = program.commands.find((candidate) => candidate.name() === argv[0]);
  if (!command) return undefined;
  const args = argv.slice(1);
  const bare = new Set(bareArgumentPositions(command, args));
  if (bare.size === 0) return undefined;
  const accepts = (flag: string) => command.options.some((option) => option.long === flag);
  const flagFor = (file: string) =>
    modelExtensions.some((extension) => file.toLowerCase().endsWith(extension)) && accepts('--model') ? '--model' : accepts('--data') ? '--data' : undefined;
  const words: string[] = [];
  for (const [index, token] of args.entries()) {
    if (token === '--' && !bare.has(index)) continue;
    const flag = bare.has(index) ? flagFor(token) : '';
    if (flag === undefined) return undefined;
    words.push(flag ? `${flag} ${quoteArgument(token)}` : quoteArgument(token));
  }
  return `files are given as options: did you mean \`nnstudio ${command.name()} ${words.join(' ')}\`? (nnstudio ${command.name()} --help lists them)`;
}

function quoteArgument(text: string): string {
  return /^[\w./:@%+=,-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}
