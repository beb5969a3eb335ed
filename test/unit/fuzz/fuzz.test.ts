// The fuzz run of `npm test`: 300 mutated inputs per reader (the first 300 cases of `npm run fuzz`, which
// runs 10 000). Every input must load into a valid result or fail with the reader's documented error.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { formatFailures, fuzzReader } from './runner';
import { fuzzTargets } from './targets';

const count = Number(process.env.NNSTUDIO_FUZZ_COUNT ?? 300);

describe('fuzzed inputs', () => {
  for (const target of fuzzTargets) {
    test(`${target.name}: ${count} mutated inputs, each a valid result or a ${target.documentedError} naming the file`, async () => {
      const report = await fuzzReader(target.name, { seed: 1, count });
      assert.equal(report.accepted + report.rejected + report.failures.length >= count, true);
      assert.ok(report.rejected > 0, 'the mutations must break some inputs');
      assert.equal(report.failures.length, 0, formatFailures(report));
    });
  }
});
