// The catalog a page loads when it connects (devices, presets, datasets, models): a part the server cannot
// give is said above every screen and logged to the console, not left silently empty. The WebSocket is
// routed so that one channel answers with an error while the rest reach the real server.
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import type { WebSocketRoute } from 'playwright-core';
import { skipWithoutBrowser } from './support/browser';
import { sequentialSteps } from './support/steps';
import { openStudio, type Studio } from './support/studio';

const failure = 'the GPU driver did not answer';

/** Passes every message through, except devices:list, which gets an error answer. */
function failDeviceList(socket: WebSocketRoute): void {
  const server = socket.connectToServer();
  socket.onMessage((message) => {
    const request = JSON.parse(String(message)) as { id: number; channel: string };
    if (request.channel === 'devices:list') socket.send(JSON.stringify({ id: request.id, error: { message: failure } }));
    else server.send(message);
  });
  server.onMessage((message) => socket.send(message));
}

describe('a catalog call that fails is shown, not swallowed', { skip: skipWithoutBrowser() }, () => {
  let studio: Studio | undefined;
  const step = sequentialSteps(() => studio);

  before(async () => {
    studio = await openStudio();
  }, { timeout: 60_000 });

  after(async () => {
    await studio?.close();
  });

  step('devices:list failing shows an alert naming the part and the reason, and logs it', 20_000, async () => {
    const page = studio!.page;
    await page.routeWebSocket((url) => url.pathname === '/api', failDeviceList);
    await page.reload();
    const alert = page.getByRole('alert').filter({ hasText: 'Could not load the devices' });
    await alert.waitFor();
    assert.equal(await alert.textContent(), `Could not load the devices (${failure}). Reload the page to try again.`);
    const logged = studio!.pageErrors.filter((line) => line.includes('could not load the devices'));
    assert.deepEqual(logged, [`console error: NN Studio: could not load the devices: ${failure}`]);
    studio!.pageErrors.splice(0);
  });
});
