// The Model screen: presets, the layer editor and the training settings.
import assert from 'node:assert/strict';
import type { Locator, Page } from 'playwright-core';
import { escape } from './data';
import { eventually, goTo, section } from '../support/ui';

export async function choosePreset(page: Page, name: string): Promise<void> {
  await goTo(page, 'Model');
  const preset = page.getByRole('group', { name: 'Presets' }).getByRole('button', { name: new RegExp(`^${escape(name)} `) });
  await preset.click();
  await preset.and(page.locator('[aria-pressed="true"]')).waitFor();
}

/** The layer table's row for layer `position` (1-based), found by its "Layer <n> kind" choice. */
export function layerRow(page: Page, position: number): Locator {
  return page.getByRole('row').filter({ has: page.getByRole('combobox', { name: `Layer ${position} kind`, exact: true }) });
}

export async function setLayerField(page: Page, position: number, field: 'units' | 'filters' | 'kernel' | 'stride' | 'size' | 'rate', value: number): Promise<void> {
  await layerRow(page, position).getByRole('spinbutton', { name: `Layer ${position} ${field}`, exact: true }).fill(String(value));
}

export async function setLayerActivation(page: Page, position: number, activation: string): Promise<void> {
  await layerRow(page, position).getByRole('combobox', { name: `Layer ${position} activation`, exact: true }).selectOption(activation);
}

/** Adds a layer of `kind` ("Dense", "Dropout", …) at the end of the list. */
export async function addLayer(page: Page, kind: string): Promise<void> {
  await page.getByRole('combobox', { name: 'Kind of layer to add' }).selectOption({ label: kind });
  await page.getByRole('button', { name: '+ Add layer' }).click();
}

export async function removeLayer(page: Page, position: number): Promise<void> {
  await page.getByRole('button', { name: `Remove layer ${position}`, exact: true }).click();
}

export async function moveLayerUp(page: Page, position: number): Promise<void> {
  await page.getByRole('button', { name: `Move layer ${position} up`, exact: true }).click();
}

/** The model in the CLI's --layers syntax, as the editor shows it under the table. */
export async function layersText(page: Page): Promise<string> {
  return ((await section(page, 'Layers').getByRole('code').textContent()) ?? '').trim();
}

/** Waits for the layer table's check to say the model fits the data. */
export async function waitModelFits(page: Page, layers?: string): Promise<void> {
  await eventually(async () => {
    if (layers !== undefined) assert.equal(await layersText(page), layers);
    const footer = section(page, 'Layers').getByRole('table').locator('tfoot');
    assert.match((await footer.textContent()) ?? '', /fits the data/);
  });
}

export interface TrainingSettings {
  epochs?: number;
  batchSize?: number;
  learningRate?: number;
  optimizer?: 'Adam' | 'SGD';
  /** 'cpu', 'cuda' or 'auto' (the option values). */
  device?: 'cpu' | 'cuda' | 'auto';
}

export async function setTrainingSettings(page: Page, settings: TrainingSettings): Promise<void> {
  const card = section(page, 'Training settings');
  if (settings.optimizer) await card.getByRole('combobox', { name: 'Optimizer' }).selectOption({ label: settings.optimizer });
  if (settings.learningRate !== undefined) await card.getByRole('spinbutton', { name: 'Learning rate' }).fill(String(settings.learningRate));
  if (settings.batchSize !== undefined) await card.getByRole('spinbutton', { name: 'Batch size' }).fill(String(settings.batchSize));
  if (settings.epochs !== undefined) await card.getByRole('spinbutton', { name: 'Epochs' }).fill(String(settings.epochs));
  if (settings.device) await card.getByRole('combobox', { name: 'Device' }).selectOption(settings.device);
}

/**
 * From the Small MLP preset on a 3-class table: two `units`-wide ReLU layers and the output, a model slow
 * enough on 2 CPU cores (with a small batch) to pause, reload or cancel it while it trains. Returns its layers.
 */
export async function buildTwoWideLayers(page: Page, units: number): Promise<string> {
  const layers = `dense:${units}:relu,dense:${units}:relu,dense:3`;
  await choosePreset(page, 'Small MLP');
  await waitModelFits(page, 'flatten,dense:128:relu,dense:3');
  await removeLayer(page, 1);
  await setLayerField(page, 1, 'units', units);
  await addLayer(page, 'Dense');
  await moveLayerUp(page, 3);
  await setLayerField(page, 2, 'units', units);
  await setLayerActivation(page, 2, 'relu');
  await waitModelFits(page, layers);
  return layers;
}
