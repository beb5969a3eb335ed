// A flow as a sequence of node:test tests, one per user step, sharing one browser session: each step has
// its own time limit, a failing step leaves a screenshot and the server's log under dist/e2e-failures, and
// the steps after it are skipped (they would only fail for the same reason).
import { test, type TestContext } from 'node:test';
import type { Studio } from './studio';

export type Step = (name: string, timeoutMs: number, run: (t: TestContext) => Promise<void>) => void;

export function sequentialSteps(studio: () => Studio | undefined): Step {
  let failed: string | undefined;
  return (name, timeoutMs, run) => {
    // node:test's own limit is a backstop: ours fires first, so the failure is recorded and reported here.
    test(name, { timeout: timeoutMs + 10_000 }, async (t) => {
      if (failed) return t.skip(`an earlier step failed: ${failed}`);
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          run(t),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`step "${name}" took longer than ${timeoutMs / 1000} s`)), timeoutMs);
          }),
        ]);
      } catch (error) {
        failed = name;
        const where = await studio()?.artifacts(name).catch(() => undefined);
        if (where) t.diagnostic(`screenshot and log: ${where}.png, ${where}.log`);
        throw error;
      } finally {
        clearTimeout(timer);
      }
    });
  };
}
