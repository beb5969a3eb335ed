// `npx nnstudio …` in the repository starts without an npm warning: the project's own npm configuration
// (.npmrc, package.json) holds nothing npm does not know. The user's and the machine's npm configuration are
// set aside (empty user and global npmrc, no npm_* variables of a surrounding `npm test`), so the project's
// is what is checked. --ignore-scripts and a private npm cache: npx links the project into its cache, which
// would otherwise run the project's prepare and install scripts (a full build) on a cache's first use.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { repoRoot } from '../api/helpers';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-npx-'));
after(() => fs.rmSync(scratch, { recursive: true, force: true }));

function npx(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const userConfig = path.join(scratch, 'user.npmrc');
  const globalConfig = path.join(scratch, 'global.npmrc');
  fs.writeFileSync(userConfig, '');
  fs.writeFileSync(globalConfig, '');
  const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
  // no update check either: it would reach the registry and print a notice
  Object.assign(env, { npm_config_userconfig: userConfig, npm_config_globalconfig: globalConfig, npm_config_cache: path.join(scratch, 'cache'), npm_config_update_notifier: 'false' });
  return new Promise((resolve) => {
    execFile('npx', args, { cwd: repoRoot, env, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

test('npx nnstudio --version prints the version and no npm warning', async () => {
  const { version } = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string };
  const { code, stdout, stderr } = await npx(['--ignore-scripts', 'nnstudio', '--version']);
  assert.equal(code, 0, stderr);
  assert.equal(stdout.trim(), version);
  assert.doesNotMatch(stderr, /npm warn/i);
});

test('onnxruntime-node is kept from downloading by a policy npm knows, not by an unknown .npmrc key', () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { allowScripts?: Record<string, boolean> };
  assert.equal(manifest.allowScripts?.['onnxruntime-node'], false, 'package.json denies its install script (npm >= 11.16)');
  const npmrc = path.join(repoRoot, '.npmrc');
  const keys = fs.existsSync(npmrc) ? fs.readFileSync(npmrc, 'utf8').split('\n').filter((line) => /^\s*[^#;\s]/.test(line)) : [];
  assert.deepEqual(keys.filter((line) => /onnxruntime/i.test(line)), []);
});
