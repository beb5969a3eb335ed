// The one logger for failures nobody asked about directly (a static file that could not be sent, a listener
// that threw, a session folder that could not be removed): `serve`'s server and the UI API take one, so
// tests capture it; by default a line on stderr that says what failed, where, and the error.

export interface Logger {
  /** `context` says what failed and where ("serve: sending /index.html"); `error` is why. */
  error(context: string, error?: unknown): void;
  /** Something the user may want to know that is not a failure yet. */
  warn(context: string, error?: unknown): void;
}

/** The error's message, or the value itself when something other than an Error was thrown. */
export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

/** One line per entry: `nnstudio: <level>: <context>: <message>`. */
export function streamLogger(write: (line: string) => void = (line) => void process.stderr.write(line)): Logger {
  const entry = (level: string, context: string, error: unknown) =>
    write(`nnstudio: ${level}: ${context}${error === undefined ? '' : `: ${errorText(error)}`}\n`);
  return {
    error: (context, error) => entry('error', context, error),
    warn: (context, error) => entry('warning', context, error),
  };
}

export const stderrLogger: Logger = streamLogger();
