// One reader's fuzz cases, on a worker thread so that the runner can stop a hang (terminate) and survive an
// out-of-memory crash. Progress goes through shared memory (the case running now), failures as messages.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { guardAllocations, peakMemoryMb } from './allocations';
import { caseRandom } from './random';
import type { WorkerFailure, WorkerInput, WorkerMessage } from './runner';
import { FuzzFailure, fuzzTarget } from './targets';

async function main(input: WorkerInput): Promise<void> {
  guardAllocations(input.allocationLimitBytes);
  const target = fuzzTarget(input.reader);
  const progress = new Int32Array(input.progress);
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), `nnstudio-fuzz-${input.reader}-`));
  const post = (message: WorkerMessage) => parentPort!.postMessage(message);
  try {
    for (let index = input.start; index < input.end; index++) {
      Atomics.store(progress, 0, index + 1); // 0 means "loading"
      let description = '(the case could not be built)';
      try {
        const fuzzCase = target.makeCase(caseRandom(input.seed, input.reader, index));
        description = fuzzCase.description;
        for (const name of fs.readdirSync(folder)) fs.rmSync(path.join(folder, name), { recursive: true, force: true });
        const peakBefore = peakMemoryMb();
        const outcome = await fuzzCase.run(folder);
        Atomics.add(progress, outcome === 'accepted' ? 1 : 2, 1);
        const growth = peakMemoryMb() - peakBefore;
        if (growth > input.memoryLimitMb) {
          throw new FuzzFailure(`the peak memory grew by ${growth.toFixed(0)} MB in this case (limit ${input.memoryLimitMb} MB): an allocation the input's size does not justify`);
        }
      } catch (error) {
        const problem = error instanceof FuzzFailure ? error.message : `the harness failed: ${(error as Error)?.stack ?? String(error)}`;
        const failure: WorkerFailure = { index, description, problem };
        post({ type: 'failure', failure });
      }
    }
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
  }
  post({ type: 'done' });
}

main(workerData as WorkerInput).catch((error) => {
  parentPort!.postMessage({ type: 'crash', problem: (error as Error)?.stack ?? String(error) } satisfies WorkerMessage);
});
