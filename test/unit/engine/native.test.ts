// Locating and loading the native module (no addon needed for most of these).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  findPackageRoot,
  loadNativeModule,
  nativeModuleEnv,
  nativeModulePath,
  nativeModuleRelativePath,
} from '../../../app/engine/native';

describe('native module location', () => {
  test('walks up from a nested folder to the nnstudio package root', () => {
    const root = findPackageRoot(__dirname);
    assert.ok(root, 'a root above the compiled test');
    const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { name: string };
    assert.equal(manifest.name, 'nnstudio');
    assert.equal(nativeModulePath({}, __dirname), path.join(root, nativeModuleRelativePath));
  });

  test('skips package.json files of other packages', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-native-'));
    try {
      fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'nnstudio' }));
      const inner = path.join(dir, 'node_modules', 'other', 'lib');
      fs.mkdirSync(inner, { recursive: true });
      fs.writeFileSync(path.join(dir, 'node_modules', 'other', 'package.json'), JSON.stringify({ name: 'other' }));
      assert.equal(findPackageRoot(inner), dir);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test(`${nativeModuleEnv} overrides the location`, () => {
    assert.equal(nativeModulePath({ [nativeModuleEnv]: '/opt/x/nnstudio.node' }, __dirname), '/opt/x/nnstudio.node');
  });

  test('a missing module gives a clear error', () => {
    assert.throws(
      () => loadNativeModule(path.join(os.tmpdir(), 'does-not-exist', 'nnstudio.node')),
      /the native engine is not built: run npm install/,
    );
  });

  test('an unloadable module names the file and the reason', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-native-'));
    try {
      const file = path.join(dir, 'nnstudio.node');
      fs.writeFileSync(file, 'not a shared object');
      assert.throws(() => loadNativeModule(file), (error: Error) => {
        assert.match(error.message, /failed to load/);
        assert.ok(error.message.includes(file));
        return true;
      });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
