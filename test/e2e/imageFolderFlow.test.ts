// An image folder end to end (issue 15): MNIST digits written as coloured PNG/JPEG/BMP images of mixed sizes,
// one subfolder per class, chosen as a folder in the Data screen; thumbnails per class in colour; the Fast
// ResNet preset (residual blocks, batchnorm, its recipe's shifts of 2 pixels shown in the settings) trained
// one epoch on the CPU; a confusion cell's examples; an uploaded image predicted.
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import WebSocket from 'ws';
import type { ModelInfo } from '../../app/api/types';
import { writeDigitFolder, zipOfFolder } from '../support/imageFolder';
import { skipWithoutBrowser } from './support/browser';
import { sequentialSteps } from './support/steps';
import { openStudio, type Studio } from './support/studio';
import { eventually, goTo, readTable, section } from './support/ui';
import { readDatasetSummary } from './flows/data';
import { choosePreset, layerRow, layersText, setTrainingSettings, waitModelFits } from './flows/model';
import { startTraining, waitCompleted } from './flows/train';
import { openCell, readConfusion, readHeadline } from './flows/evaluate';

const classes = ['one', 'two', 'zero'];
type Canvas = { width: number; height: number; getContext(kind: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> } } | null };

/** One API call on a connection of the test's own, for what the server recorded that no screen shows. */
async function askServer<Result>(browserUrl: string, channel: string, payload: unknown): Promise<Result> {
  const url = new URL(browserUrl);
  const socket = new WebSocket(`ws://${url.host}/api${url.search}`);
  try {
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    const reply = new Promise<{ result?: Result; error?: { message: string } }>((resolve) => {
      socket.on('message', (data) => {
        const message = JSON.parse(String(data)) as { id?: number; result?: Result; error?: { message: string } };
        if (message.id === 1) resolve(message);
      });
    });
    socket.send(JSON.stringify({ id: 1, channel, payload }));
    const answer = await reply;
    if (answer.error) throw new Error(`${channel}: ${answer.error.message}`);
    return answer.result as Result;
  } finally {
    socket.terminate();
  }
}

describe('image folder flow: a folder of coloured digits, the Fast ResNet preset, one epoch, examples, an uploaded image', { skip: skipWithoutBrowser() }, () => {
  let studio: Studio | undefined;
  const step = sequentialSteps(() => studio);
  const page = () => studio!.page;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nnstudio-e2e-folder-'));
  const folder = path.join(dir, 'digits');

  before(async () => {
    await writeDigitFolder(folder, { perClass: 40, formats: ['png', 'jpeg', 'bmp'] });
    fs.writeFileSync(path.join(folder, 'zero', 'damaged.png'), 'not an image');
    fs.writeFileSync(path.join(dir, 'digits.zip'), zipOfFolder(folder, 'digits'));
    fs.writeFileSync(path.join(dir, 'damaged.zip'), 'PK\u0003\u0004 not a ZIP after all');
    studio = await openStudio();
  }, { timeout: 60_000 });

  after(async () => {
    await studio?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  step('choose the folder: classes from its subfolders, RGB, thumbnails per class, the damaged file named', 60_000, async () => {
    await goTo(page(), 'Data');
    const card = section(page(), 'Image folder');
    const chooser = page().waitForEvent('filechooser');
    await card.getByRole('button', { name: 'Choose a folder…' }).click();
    await (await chooser).setFiles(folder);
    await card.getByRole('status').filter({ hasText: 'digits: 121 files' }).waitFor();
    await card.getByRole('spinbutton', { name: 'Size (pixels a side)' }).fill('28');
    await card.getByRole('button', { name: 'Open image folder' }).click();
    await page().getByRole('heading', { level: 2, name: 'digits' }).waitFor({ timeout: 30_000 });
    const summary = await eventually(async () => {
      const shown = await readDatasetSummary(page());
      assert.equal(shown['Examples'], '120');
      return shown;
    });
    assert.equal(summary['Image shape'], '3 × 28 × 28');
    assert.equal(summary['Classes'], '3');
    await page().getByText(/1 of 121 images could not be decoded and were skipped: zero\/damaged\.png/).waitFor();
    const preview = section(page(), 'Preview');
    for (const name of classes) {
      await eventually(async () => assert.ok((await preview.getByRole('region', { name: `Class ${name}` }).getByLabel(`an image labelled ${name}`).count()) >= 3));
    }
    // the thumbnails are drawn in colour: some pixel's channels differ
    const coloured = await preview.locator('canvas').first().evaluate((element) => {
      const canvas = element as unknown as Canvas;
      const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
      for (let at = 0; at < data.length; at += 4) if (Math.abs(data[at] - data[at + 1]) > 40 || Math.abs(data[at + 1] - data[at + 2]) > 40) return true;
      return false;
    });
    assert.ok(coloured, 'a colour thumbnail');
  });

  step('build the Fast ResNet preset for 3 × 28 × 28 inputs: residual blocks in the table, its recipe in the settings', 60_000, async () => {
    await goTo(page(), 'Model');
    await choosePreset(page(), 'Fast ResNet (28x28)');
    await waitModelFits(page());
    const layers = await readTable(section(page(), 'Layers').getByRole('table'));
    assert.equal(layers.rows[0][3], '3 × 28 × 28', 'the input row: three 28 × 28 channels');
    assert.equal(layers.rows[layers.rows.length - 1][3], '3', 'three class scores');
    // layers 5 and 7 are the residual blocks: the first keeps 32 × 14 × 14 (an identity shortcut), the
    // second halves the size with 64 filters (a 1x1 projection shortcut of stride 2)
    for (const [position, output, shortcut] of [[5, '32 × 14 × 14', /\+ identity shortcut$/], [7, '64 × 7 × 7', /\+ 1x1 projection shortcut, stride 2 \([\d,]+ parameters\)$/]] as const) {
      const row = layerRow(page(), position);
      assert.equal(((await row.getByRole('combobox', { name: `Layer ${position} kind`, exact: true }).locator('option:checked').textContent()) ?? '').trim(), 'Residual block');
      assert.match(((await row.getByRole('button', { name: `Layer ${position} block's layers` }).textContent()) ?? '').trim(), shortcut);
      assert.equal(layers.rows[position][3], output);
    }
    assert.equal(await layersText(page()), 'conv:32x3:same,batchnorm,relu,maxpool:2,residual(conv:32x3:same,batchnorm,relu,conv:32x3:same,batchnorm),relu,residual(conv:64x3:same:s2,batchnorm,relu,conv:64x3:same,batchnorm),relu,gap,dense:3');
    // the preset's recipe fills the settings, its augmentation included: what is shown is what trains
    const settings = section(page(), 'Training settings');
    assert.equal(await settings.getByRole('spinbutton', { name: 'Epochs' }).inputValue(), '15');
    assert.equal(await settings.getByRole('spinbutton', { name: 'Batch size' }).inputValue(), '128');
    assert.equal(await settings.getByRole('spinbutton', { name: 'Shift (pixels)' }).inputValue(), '2');
    assert.equal(await settings.getByRole('spinbutton', { name: 'Rotation (degrees)' }).inputValue(), '');
  });

  step('train it one epoch on the CPU: the shifts shown are the shifts trained with', 60_000, async (t) => {
    await setTrainingSettings(page(), { epochs: 1, batchSize: 16, device: 'cpu' });
    const started = performance.now();
    await startTraining(page());
    const outcome = await waitCompleted(page(), 50_000);
    t.diagnostic(`one epoch of Fast ResNet on the CPU, start to outcome: ${((performance.now() - started) / 1000).toFixed(1)} s`);
    assert.match(outcome, /after 1 epoch · /);
    // a small folder in batches of 16: few steps an epoch, so the plan says why validation may trail training
    const notes = page().getByRole('list', { name: 'Notes on this run' });
    assert.match((await notes.textContent()) ?? '', /batchnorm with only \d+ steps? an epoch: .*more epochs or a smaller batch size help/);
    const [model] = await askServer<ModelInfo[]>(studio!.serve.browserUrl, 'models:list', {});
    assert.deepEqual(model?.training?.options.augment, { translate: 2 }, "the run's recorded augmentation");
    assert.equal(model?.training?.options.batchSize, 16);
  });

  step('the confusion matrix names the folders; a cell shows its colour images', 30_000, async () => {
    await page().getByRole('button', { name: 'See the evaluation →' }).click();
    const confusion = await readConfusion(page());
    assert.deepEqual(confusion.labels, classes);
    const cell = (() => {
      for (const [actual, row] of confusion.counts.entries()) for (const [predicted, count] of row.entries()) if (count > 0) return { actual, predicted };
      throw new Error('an empty confusion matrix');
    })();
    await openCell(page(), classes[cell.actual], classes[cell.predicted]);
    const images = page().getByRole('list', { name: 'Examples, most confident first' }).getByLabel(/^an image/);
    await eventually(async () => assert.ok((await images.count()) >= 1));
    const size = await images.first().evaluate((element) => [(element as unknown as Canvas).width, (element as unknown as Canvas).height]);
    assert.deepEqual(size, [28, 28]);
    await page().getByRole('button', { name: 'Close examples' }).click();
    assert.deepEqual(studio!.pageErrors, [], 'no errors in the page');
  });

  step('an uploaded image is predicted, shown as the model sees it', 30_000, async () => {
    await goTo(page(), 'Models');
    const card = section(page(), 'Try an image');
    const image = path.join(folder, 'one', fs.readdirSync(path.join(folder, 'one'))[0]);
    const chooser = page().waitForEvent('filechooser');
    await card.getByRole('button', { name: 'Choose an image…' }).click();
    await (await chooser).setFiles(image);
    await card.getByText(/^Prediction: (one|two|zero) \([\d.]+%\)$/).waitFor();
    await card.getByText(`${path.basename(image)}, as the model sees it`).waitFor();
    const bars = await card.getByRole('list', { name: 'Class probabilities' }).getByRole('listitem').count();
    assert.equal(bars, 3);
  });

  step('evaluate again with test-time augmentation: the title says so, every image counted', 60_000, async () => {
    await goTo(page(), 'Evaluate');
    const tta = page().getByRole('checkbox', { name: 'Test-time augmentation' });
    await tta.check();
    await page().getByRole('button', { name: 'Evaluate', exact: true }).click();
    const headline = await eventually(async () => {
      const shown = await readHeadline(page());
      assert.match(shown.title, /\(test-time augmentation\)$/);
      return shown;
    }, 30_000);
    assert.ok(headline.examples > 0 && headline.accuracy >= 0 && headline.accuracy <= 1);
  });

  step('a ZIP of the folder opens the same way; a damaged ZIP is named in one line', 60_000, async () => {
    await goTo(page(), 'Data');
    const card = section(page(), 'Image folder');
    const choose = async (file: string): Promise<void> => {
      const chooser = page().waitForEvent('filechooser');
      await card.getByRole('button', { name: 'Choose a ZIP…' }).click();
      await (await chooser).setFiles(file);
    };
    await choose(path.join(dir, 'damaged.zip'));
    await card.getByText(/^damaged\.zip: is not a ZIP that can be read \(/).waitFor();
    await choose(path.join(dir, 'digits.zip'));
    await card.getByRole('status').filter({ hasText: 'digits: 121 files' }).waitFor();
    await card.getByRole('spinbutton', { name: 'Size (pixels a side)' }).fill('28');
    await card.getByRole('button', { name: 'Open image folder' }).click();
    const summary = await eventually(async () => {
      const shown = await readDatasetSummary(page());
      assert.equal(shown['Examples'], '120');
      return shown;
    }, 30_000);
    assert.equal(summary['Image shape'], '3 × 28 × 28');
    assert.equal(summary['Classes'], '3');
    for (const name of classes) await section(page(), 'Preview').getByRole('region', { name: `Class ${name}` }).waitFor();
    assert.deepEqual(studio!.pageErrors, [], 'no errors in the page');
  });
});
