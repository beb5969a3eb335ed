// The window's security settings as values: webPreferences, the CSP, which files app:// may serve and
// which frames may call the API.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as path from 'node:path';
import {
  appEntryUrl,
  contentSecurityPolicy,
  contentTypeFor,
  isTrustedSender,
  rendererFileFor,
  responseHeaders,
  windowWebPreferences,
} from '../../../app/electron/security';

describe('the window', () => {
  test('is isolated, sandboxed and has no Node', () => {
    assert.equal(windowWebPreferences.contextIsolation, true);
    assert.equal(windowWebPreferences.sandbox, true);
    assert.equal(windowWebPreferences.nodeIntegration, false);
    assert.equal(windowWebPreferences.nodeIntegrationInWorker, false);
    assert.equal(windowWebPreferences.nodeIntegrationInSubFrames, false);
    assert.equal(windowWebPreferences.webSecurity, true);
    assert.equal(windowWebPreferences.allowRunningInsecureContent, false);
    assert.equal(windowWebPreferences.webviewTag, false);
    assert.ok(Object.isFrozen(windowWebPreferences));
  });

  test('loads the app from its own origin', () => {
    assert.equal(appEntryUrl, 'app://nnstudio/index.html');
  });
});

describe('the CSP', () => {
  const directives = new Map(contentSecurityPolicy.split('; ').map((part) => [part.split(' ')[0], part.split(' ').slice(1)]));

  test('allows no eval, no inline code and nothing from another origin', () => {
    assert.doesNotMatch(contentSecurityPolicy, /unsafe-eval|unsafe-inline|wasm-unsafe-eval|unsafe-hashes/);
    assert.doesNotMatch(contentSecurityPolicy, /https?:|wss?:|\*/);
    assert.deepEqual(directives.get('default-src'), ["'none'"]);
    assert.deepEqual(directives.get('script-src'), ["'self'"]);
    assert.deepEqual(directives.get('style-src'), ["'self'"]);
    assert.deepEqual(directives.get('object-src'), ["'none'"]);
    assert.deepEqual(directives.get('frame-ancestors'), ["'none'"]);
    assert.deepEqual(directives.get('base-uri'), ["'none'"]);
  });

  test('is on every response, with a JavaScript type for module scripts', () => {
    const headers = responseHeaders('/x/assets/index-abc.js');
    assert.equal(headers['Content-Security-Policy'], contentSecurityPolicy);
    assert.equal(headers['X-Content-Type-Options'], 'nosniff');
    assert.match(headers['Content-Type'], /^text\/javascript/);
    assert.match(contentTypeFor('index.html'), /^text\/html/);
    assert.equal(contentTypeFor('data.bin'), 'application/octet-stream');
  });
});

describe('app:// serves the renderer folder only', () => {
  const root = path.resolve('/opt/nnstudio/dist/renderer');

  test('maps paths inside the folder', () => {
    assert.equal(rendererFileFor('app://nnstudio/', root), path.join(root, 'index.html'));
    assert.equal(rendererFileFor('app://nnstudio/index.html', root), path.join(root, 'index.html'));
    assert.equal(rendererFileFor('app://nnstudio/assets/index-abc.js?v=1#x', root), path.join(root, 'assets', 'index-abc.js'));
  });

  test('refuses other hosts, other schemes and ways out of the folder', () => {
    assert.equal(rendererFileFor('app://elsewhere/index.html', root), undefined);
    assert.equal(rendererFileFor('file:///etc/passwd', root), undefined);
    assert.equal(rendererFileFor('https://nnstudio/index.html', root), undefined);
    assert.equal(rendererFileFor('app://nnstudio/..%2f..%2fpackage.json', root), undefined);
    assert.equal(rendererFileFor('app://nnstudio/a%00.js', root), undefined);
    assert.equal(rendererFileFor('app://nnstudio/%E0%A4%A', root), undefined);
    assert.equal(rendererFileFor('not a url', root), undefined);
    // The URL parser folds ../ segments (%2e%2e too) before we see them: still inside.
    assert.equal(rendererFileFor('app://nnstudio/../../etc/passwd', root), path.join(root, 'etc', 'passwd'));
    assert.equal(rendererFileFor('app://nnstudio/%2e%2e/%2e%2e/package.json', root), path.join(root, 'package.json'));
  });
});

describe('only our own top frame may call the API', () => {
  test('trusts app://nnstudio in the main frame', () => {
    assert.equal(isTrustedSender({ url: 'app://nnstudio/index.html', isMainFrame: true }), true);
  });

  test('refuses iframes, other origins, missing frames', () => {
    assert.equal(isTrustedSender({ url: 'app://nnstudio/index.html', isMainFrame: false }), false);
    assert.equal(isTrustedSender({ url: 'https://example.com/', isMainFrame: true }), false);
    assert.equal(isTrustedSender({ url: 'file:///tmp/x.html', isMainFrame: true }), false);
    assert.equal(isTrustedSender({ url: 'app://other/index.html', isMainFrame: true }), false);
    assert.equal(isTrustedSender({ url: '', isMainFrame: true }), false);
    assert.equal(isTrustedSender(undefined), false);
    assert.equal(isTrustedSender(null), false);
  });
});
