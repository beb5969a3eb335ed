// `nnstudio serve` on the real built renderer (dist/renderer): the page needs the token, its hashed script
// and style load through the cookie the first request set, every answer carries the CSP, and the command
// refuses to start without a built UI.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { rendererDir, startServe } from '../../../app/cli/commands/serve';
import { contentSecurityPolicy, type RunningServer } from '../../../app/server';

const built = fs.existsSync(path.join(rendererDir, 'index.html'));

describe('serve with the built renderer', { skip: built ? false : 'dist/renderer is not built (npm run build:renderer)' }, () => {
  let server: RunningServer;
  before(async () => {
    server = await startServe({ port: 0 });
  });
  after(() => server?.close());

  test('the page is refused without the token', async () => {
    const response = await fetch(server.url);
    assert.equal(response.status, 401);
    assert.equal(response.headers.get('content-security-policy'), contentSecurityPolicy);
  });

  test('index.html with the token, then its assets with the cookie it set, all under the CSP', async () => {
    const page = await fetch(server.browserUrl);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(page.headers.get('content-security-policy'), contentSecurityPolicy);
    const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0];
    assert.match(cookie, new RegExp(`^nnstudio_token_${server.port}=`));
    const html = await page.text();
    assert.match(html, /<title>NN Studio<\/title>/);
    assert.doesNotMatch(html, /<script(?![^>]*\ssrc=)[^>]*>/, 'no inline script (the CSP forbids it)');
    assert.doesNotMatch(html, /<style|style="/, 'no inline style');

    const assets = [...html.matchAll(/(?:src|href)="(\.\/assets\/[^"]+)"/g)].map((match) => match[1]);
    assert.ok(assets.some((asset) => asset.endsWith('.js')), `a script in ${html}`);
    assert.ok(assets.some((asset) => asset.endsWith('.css')), `a stylesheet in ${html}`);
    assert.ok(assets.some((asset) => asset.endsWith('.svg')), `an icon in ${html} (no favicon.ico request to answer 404)`);
    const types: Record<string, RegExp> = { js: /^text\/javascript/, css: /^text\/css/, svg: /^image\/svg\+xml/ };
    for (const asset of assets) {
      const url = new URL(asset, server.url);
      assert.equal((await fetch(url)).status, 401, `${asset} without the token`);
      const response = await fetch(url, { headers: { cookie } });
      assert.equal(response.status, 200, asset);
      assert.match(response.headers.get('content-type') ?? '', types[asset.split('.').pop() ?? ''] ?? /^$/);
      assert.equal(response.headers.get('content-security-policy'), contentSecurityPolicy);
      assert.ok((await response.text()).length > (asset.endsWith('.svg') ? 200 : 1000), `${asset} has content`);
    }
  });

  test("the CSP lets the Save button's blob: download through", () => {
    // The renderer saves a model with <a download href="blob:…">.click(): a navigation, which fetch
    // directives (default-src, connect-src, img-src) do not govern. What would stop it: a sandbox without
    // allow-downloads, or a navigation directive; form-action applies to forms only.
    const directives = contentSecurityPolicy.split(';').map((part) => part.trim().split(/\s+/)[0]);
    assert.ok(!directives.includes('sandbox'), contentSecurityPolicy);
    assert.ok(!directives.includes('navigate-to'), contentSecurityPolicy);
    const bundle = fs.readdirSync(path.join(rendererDir, 'assets')).filter((name) => name.endsWith('.js'))
      .map((name) => fs.readFileSync(path.join(rendererDir, 'assets', name), 'utf8')).join('\n');
    assert.match(bundle, /createObjectURL/);
    assert.match(bundle, /models:download/);
  });

  test('the bundle reaches nothing outside its origin', async () => {
    const assetsDir = path.join(rendererDir, 'assets');
    for (const name of fs.readdirSync(assetsDir)) {
      const text = fs.readFileSync(path.join(assetsDir, name), 'utf8');
      assert.doesNotMatch(text, /@import\s+url\(\s*["']?https?:|fonts\.googleapis|cdn\.jsdelivr|unpkg\.com/, name);
    }
  });
});

test('serve says how to build the UI when it is missing', async () => {
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-no-ui-'));
  try {
    await assert.rejects(startServe({ port: 0, staticDir: empty }), /the UI is not built .*run npm install/);
  } finally {
    fs.rmSync(empty, { recursive: true, force: true });
  }
});
