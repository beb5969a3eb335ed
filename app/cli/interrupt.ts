// Ctrl-C in a long command: the first stops the work at its next safe point (`stopping` says where), which
// still saves what it has; a second one quits at once.

/** Runs `work` with a signal that the first Ctrl-C aborts; a second Ctrl-C exits with 130. */
export async function untilInterrupted<T>(work: (signal: AbortSignal) => Promise<T>, stopping: string): Promise<T> {
  const abort = new AbortController();
  const onInterrupt = () => {
    if (abort.signal.aborted) process.exit(130);
    process.stderr.write(`\nstopping ${stopping} (Ctrl-C again to quit without saving)...\n`);
    abort.abort();
  };
  process.on('SIGINT', onInterrupt);
  try {
    return await work(abort.signal);
  } finally {
    process.off('SIGINT', onInterrupt);
  }
}
