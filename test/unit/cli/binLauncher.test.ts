import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// bin/nnstudio.js, copied into a bare tree: it tells a missing TypeScript build from a missing dependency
// (both are MODULE_NOT_FOUND, and both messages name main.js in their require stack).
const launcher = path.resolve(__dirname, '../../../../bin/nnstudio.js');

function runIn(tree: string): { status: number | null; stderr: string } {
  const result = spawnSync(process.execPath, [path.join(tree, 'bin', 'nnstudio.js'), '--version'], { encoding: 'utf8' });
  return { status: result.status, stderr: result.stderr };
}

function bareTree(): string {
  const tree = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-bin-'));
  fs.mkdirSync(path.join(tree, 'bin'));
  fs.copyFileSync(launcher, path.join(tree, 'bin', 'nnstudio.js'));
  return tree;
}

describe('bin/nnstudio.js', () => {
  test('without dist/: says the TypeScript build is missing', () => {
    const tree = bareTree();
    const { status, stderr } = runIn(tree);
    assert.equal(status, 1);
    assert.equal(stderr, 'nnstudio: the TypeScript build is missing: run npm install (or npm run build:ts)\n');
    fs.rmSync(tree, { recursive: true });
  });

  test('with the build but a dependency gone: names the dependency', () => {
    const tree = bareTree();
    fs.mkdirSync(path.join(tree, 'dist', 'app', 'cli'), { recursive: true });
    fs.writeFileSync(path.join(tree, 'dist', 'app', 'cli', 'main.js'), "require('no-such-package-nnstudio');\n");
    const { status, stderr } = runIn(tree);
    assert.equal(status, 1);
    assert.equal(stderr, "nnstudio: a dependency is missing (Cannot find module 'no-such-package-nnstudio'): run npm install\n");
    fs.rmSync(tree, { recursive: true });
  });
});
