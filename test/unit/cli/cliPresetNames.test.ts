// Presets by their human CLI names, the seed names kept as aliases, and both in the help.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli, scratchDir } from './cliHarness';

test('--preset takes the CLI name and the older seed name alike; the help lists both', async () => {
  const dir = scratchDir('preset-names');
  const byName = await runCli(['inspect', '--preset', 'one-layer-cnn', '--json'], dir);
  const bySeed = await runCli(['inspect', '--preset', 'seed001', '--json'], dir);
  assert.equal(byName.code, 0, byName.stderr);
  assert.equal(bySeed.code, 0, bySeed.stderr);
  assert.deepEqual(JSON.parse(byName.stdout).spec, JSON.parse(bySeed.stdout).spec);
  const help = await runCli(['train', '--help'], dir);
  assert.match(help.stdout.replace(/\s+/g, ' '), /one-layer-cnn \(seed001\)/);
  assert.match(help.stdout.replace(/\s+/g, ' '), /--class-names <names>/);
});
