// The CSV flow end to end, through `nnstudio serve` in headless Chromium, as a user clicks through it:
// open a CSV with string labels, choose its label column and the other columns' roles, set the split shares
// and the normalisation, build an MLP, train it on the CPU while the page stays responsive, read the
// confusion matrix and per-class F1, open a cell's examples by confidence, save the model, import it again,
// evaluate it on another CSV file, and compare it with a second run.
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { onnx } from 'onnx-proto';
import * as ort from 'onnxruntime-node';
import { skipWithoutBrowser } from './support/browser';
import { flowerClasses, flowerCsv, flowerFeatureCount, flowerFileColumns, flowerIgnoredColumn, flowerLabelColumn, scratchDir, writeFile } from './support/data';
import { readSafetensorsHeader } from './support/safetensors';
import { sequentialSteps } from './support/steps';
import { openStudio, type Studio } from './support/studio';
import { eventually, goTo, readTable, section, timed } from './support/ui';
import { chooseCsv, datasetTab, openChosenCsv, openCsv, readColumnRoles, readDatasetSummary, readSplitCounts, setSplits } from './flows/data';
import { addLayer, choosePreset, moveLayerUp, removeLayer, setLayerActivation, setLayerField, setTrainingSettings, waitModelFits } from './flows/model';
import { chartPixels, readProgress, startTraining, stepsDone, waitCompleted, waitTraining } from './flows/train';
import { commonestMistake, evaluateWith, openCell, orderCell, readCellConfidences, readClassReport, readConfusion, readHeadline } from './flows/evaluate';
import { compareRuns, exportOnnx, importModel, modelsTable, saveModel } from './flows/models';
import { csvFlowPlan } from './flows/plans';

describe('CSV flow: string labels, an MLP, save, import, evaluate on another file', { skip: skipWithoutBrowser() }, () => {
  let studio: Studio | undefined;
  let dir: string;
  let trainCsv: string;
  let newCsv: string;
  let savedModel: string;
  const step = sequentialSteps(() => studio);
  const page = () => studio!.page;
  const trainedModel = `${csvFlowPlan.trainFile} (run-1)`;
  const secondModel = `${csvFlowPlan.trainFile} (run-2)`;
  /** Test examples, as the Data screen counts them from the test share; the evaluation must use as many. */
  let testCount = 0;

  before(async () => {
    dir = scratchDir('csv');
    trainCsv = writeFile(dir, csvFlowPlan.trainFile, flowerCsv(csvFlowPlan.trainRows, 1));
    newCsv = writeFile(dir, csvFlowPlan.newFile, flowerCsv(csvFlowPlan.newRows, 2));
    studio = await openStudio();
  }, { timeout: 60_000 });

  after(async () => {
    await studio?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  step('open a CSV with string labels, choose its label column and the other columns\' roles', 20_000, async () => {
    await chooseCsv(page(), trainCsv);
    // The roles proposed: "species" is the label, every other column a feature whose type the loader infers.
    assert.deepEqual(await readColumnRoles(page(), trainCsv), {
      id: 'Feature (type inferred)',
      sepal_length: 'Feature (type inferred)',
      sepal_width: 'Feature (type inferred)',
      species: 'Label (class or number)',
      petal_length: 'Feature (type inferred)',
      petal_width: 'Feature (type inferred)',
      garden: 'Feature (type inferred)',
    });
    // The row id says nothing about the class: ignore it.
    await openChosenCsv(page(), trainCsv, flowerLabelColumn, { [flowerIgnoredColumn]: 'Ignore' });
    // The preview arrives after the summary: the file's first rows as written, every column.
    await eventually(async () => {
      const preview = await readTable(section(page(), 'Preview').getByRole('table'));
      assert.deepEqual(preview.columns, [...flowerFileColumns]);
      assert.equal(preview.rows.length, 20);
      const label = preview.columns.indexOf(flowerLabelColumn);
      assert.deepEqual(preview.rows.slice(0, 3).map((row) => row[label]), [...flowerClasses]);
    });
    const summary = await readDatasetSummary(page());
    assert.equal(summary['Examples'], csvFlowPlan.trainRows.toLocaleString('en-US'));
    assert.equal(summary['Features'], String(flowerFeatureCount), 'four measurements and the garden one-hot; not the label, not the id');
    assert.equal(summary['Classes'], '3');
    const histogram = await page().getByRole('list', { name: 'Examples per class' }).getByRole('listitem').allTextContents();
    assert.deepEqual(histogram.map((item) => item.trim().split(/\s+/)[0]), [...flowerClasses]);
  });

  step('set the split shares and the normalisation: the counts follow', 20_000, async () => {
    await setSplits(page(), { validation: csvFlowPlan.validationShare, test: csvFlowPlan.testShare, normalisation: 'Min-max' });
    const counts = await eventually(async () => {
      const shown = await readSplitCounts(page());
      // Stratified by class (500 rows each): a quarter of each class is held out for the test.
      assert.equal(shown['Test'], csvFlowPlan.trainRows * csvFlowPlan.testShare);
      return shown;
    });
    assert.equal(counts['Training'] + counts['Validation'] + counts['Test'], csvFlowPlan.trainRows, `every row in one split: ${JSON.stringify(counts)}`);
    assert.equal(counts['Validation'], csvFlowPlan.trainRows * csvFlowPlan.validationShare, `the validation share is of all rows: ${JSON.stringify(counts)}`);
    assert.ok(await page().getByRole('radio', { name: 'Min-max', exact: true }).isChecked());
    testCount = counts['Test'];
  });

  step('build an MLP from the mlp preset with the layer editor', 20_000, async () => {
    await choosePreset(page(), 'Small MLP');
    await waitModelFits(page(), 'flatten,dense:128:relu,dense:3');
    // Table rows need no flatten: remove it. Widen the hidden layer, add a second one at the end and move it above the output layer.
    await removeLayer(page(), 1);
    await waitModelFits(page(), 'dense:128:relu,dense:3');
    await setLayerField(page(), 1, 'units', csvFlowPlan.hiddenUnits);
    await addLayer(page(), 'Dense');
    await moveLayerUp(page(), 3);
    await setLayerField(page(), 2, 'units', csvFlowPlan.hiddenUnits);
    await setLayerActivation(page(), 2, 'relu');
    await waitModelFits(page(), `dense:${csvFlowPlan.hiddenUnits}:relu,dense:${csvFlowPlan.hiddenUnits}:relu,dense:3`);
    // The table follows with each layer's output shape (the input row first).
    const units = csvFlowPlan.hiddenUnits;
    await eventually(async () => {
      const layers = await readTable(section(page(), 'Layers').getByRole('table'));
      const outputs = layers.rows.map((row) => row[3]);
      assert.deepEqual(outputs, [String(flowerFeatureCount), String(units), String(units), '3']);
    });
    await setTrainingSettings(page(), { optimizer: 'Adam', learningRate: 0.001, batchSize: csvFlowPlan.batchSize, epochs: csvFlowPlan.epochs, device: 'cpu' });
  });

  step('train on the CPU: the progress and the chart move, and the page answers while it runs', 120_000, async (t) => {
    await startTraining(page());
    const first = await waitTraining(page());
    const lossChart = await chartPixels(page(), 'Loss');
    const second = await eventually(async () => {
      const progress = await readProgress(page());
      assert.equal(progress.state, 'Training', 'still running');
      assert.ok(stepsDone(progress) > stepsDone(first), `the step counter moves: ${JSON.stringify(first)} then ${JSON.stringify(progress)}`);
      return progress;
    }, 5_000);
    await eventually(async () => assert.notEqual(await chartPixels(page(), 'Loss'), lossChart, 'the loss chart is redrawn'), 5_000);

    // A user working in the page while the run goes on: every answer within a second.
    const answers: Record<string, number> = {};
    answers['next frame'] = await timed(() => page().evaluate('new Promise((resolve) => requestAnimationFrame(resolve))'));
    answers['switch to Data'] = await timed(() => goTo(page(), 'Data'));
    answers['type in a field'] = await timed(async () => {
      const limit = page().getByRole('spinbutton', { name: /^Limit/ });
      await limit.fill('1234');
      assert.equal(await limit.inputValue(), '1234');
    });
    answers['choose in a select'] = await timed(async () => {
      const split = page().getByRole('combobox', { name: 'Split' });
      await split.selectOption({ label: 'Test (10,000)' });
      assert.equal(await split.inputValue(), 'test');
    });
    answers['switch to Model'] = await timed(() => goTo(page(), 'Model'));
    answers['switch back to Train'] = await timed(() => goTo(page(), 'Train'));
    const third = await readProgress(page());
    t.diagnostic(`answers while training (ms): ${JSON.stringify(Object.fromEntries(Object.entries(answers).map(([key, ms]) => [key, Math.round(ms)])))}`);
    assert.equal(third.state, 'Training', 'the run was still going while the page was used (raise csvFlowPlan.epochs if the machine is faster)');
    assert.ok(stepsDone(third) > stepsDone(second), 'and kept going');
    for (const [action, ms] of Object.entries(answers)) assert.ok(ms < 1_000, `${action} answered in ${Math.round(ms)} ms`);

    const outcome = await waitCompleted(page(), 90_000);
    assert.match(outcome, new RegExp(`after ${csvFlowPlan.epochs} epochs`));
    assert.match(outcome, /test accuracy [\d.]+%/);
  });

  step('read the confusion matrix and the per-class F1 of the test split', 20_000, async () => {
    await page().getByRole('button', { name: 'See the evaluation →' }).click();
    const headline = await readHeadline(page());
    assert.ok(headline.accuracy > 1 / 3, `better than chance: ${headline.accuracy}`);
    const report = await readClassReport(page());
    assert.deepEqual(report.rows.map((row) => row.label), [...flowerClasses], 'one row per class');
    for (const row of report.rows) {
      for (const value of [row.precision, row.recall, row.f1]) assert.ok(value >= 0 && value <= 1, `${row.label}: ${value} in [0, 1]`);
      assert.ok(row.support > 0);
    }
    assert.deepEqual(report.footer.map((row) => row[0]), ['Macro average', 'Weighted average']);
    const confusion = await readConfusion(page());
    assert.deepEqual(confusion.labels, [...flowerClasses]);
    assert.deepEqual(confusion.rowLabels, [...flowerClasses]);
    confusion.counts.forEach((row, index) => assert.equal(row.reduce((sum, count) => sum + count, 0), report.rows[index].support, 'a row sums to its support'));
    const total = confusion.counts.flat().reduce((sum, count) => sum + count, 0);
    assert.equal(total, headline.examples);
    assert.equal(headline.examples, testCount, 'the test split the Data screen counted');
    const correct = confusion.counts.reduce((sum, row, index) => sum + row[index], 0);
    assert.ok(Math.abs(correct / total - headline.accuracy) < 0.0001, 'the diagonal gives the accuracy');
  });

  step('open a confusion cell: its rows, sorted by confidence both ways', 20_000, async () => {
    const confusion = await readConfusion(page());
    const mistake = commonestMistake(confusion);
    assert.ok(mistake.count > 0, 'the overlapping classes give some mistakes');
    await openCell(page(), mistake.actual, mistake.predicted);
    const shown = Math.min(mistake.count, 48);
    const highest = await eventually(async () => {
      const confidences = await readCellConfidences(page());
      assert.equal(confidences.length, shown, 'one row per example of the cell (the first page)');
      return confidences;
    });
    const descending = (values: number[]) => values.every((value, index) => index === 0 || values[index - 1] >= value);
    assert.ok(descending(highest), `most confident first: ${highest}`);
    for (const confidence of highest) assert.ok(confidence > 0 && confidence <= 1, `a probability: ${confidence}`);
    await orderCell(page(), 'Least confident first');
    const lowest = await eventually(async () => {
      const confidences = await readCellConfidences(page());
      assert.ok(descending([...confidences].reverse()) && confidences[0] <= highest[0], `least confident first: ${confidences}`);
      return confidences;
    });
    if (mistake.count <= 48) assert.deepEqual([...lowest].reverse(), highest, 'the same examples, the other way round');
    await page().getByRole('button', { name: 'Close examples' }).click();
  });

  step('save the model: the download is a safetensors file', 20_000, async () => {
    await goTo(page(), 'Models');
    savedModel = await saveModel(page(), trainedModel, dir);
    assert.match(savedModel, /\.safetensors$/);
    const header = readSafetensorsHeader(savedModel);
    assert.ok(Object.keys(header.tensors).length >= 6, `three dense layers' weights and biases: ${Object.keys(header.tensors)}`);
    assert.ok(Object.keys(header.metadata).length > 0, 'metadata (the model spec and preprocessing)');
    assert.match(JSON.stringify(header.metadata), /min.?max/i, 'the normalisation chosen on the Data screen travels with the model');
  });

  step('export the model as ONNX: the download is an opset-13 graph that onnxruntime runs', 20_000, async () => {
    await goTo(page(), 'Models');
    const exported = await exportOnnx(page(), trainedModel, dir);
    assert.match(exported, /\.onnx$/);
    const decoded = onnx.ModelProto.decode(fs.readFileSync(exported));
    assert.deepEqual(decoded.opsetImport.map((opset) => Number(opset.version)), [13]);
    const metadata = Object.fromEntries(decoded.metadataProps.map((entry) => [entry.key, entry.value]));
    assert.equal(JSON.parse(metadata.class_labels).length, 3);
    assert.match(metadata.preprocessing, /min-max/, 'the normalisation chosen on the Data screen is in the graph');
    const width = JSON.parse(metadata.input_shape)[0] as number;
    const session = await ort.InferenceSession.create(exported);
    const output = await session.run({ input: new ort.Tensor('float32', new Float32Array(width).fill(1), [1, width]) });
    await session.release();
    const probabilities = Array.from(output.probabilities.data as Float32Array);
    assert.ok(Math.abs(probabilities.reduce((a, b) => a + b, 0) - 1) < 1e-5, `probabilities: ${probabilities}`);
  });

  step('import the saved model on the Models screen', 20_000, async () => {
    await goTo(page(), 'Models');
    await importModel(page(), savedModel);
    await eventually(async () => assert.equal((await readTable(modelsTable(page()))).rows.length, 2, 'the trained and the imported model'));
  });

  step('evaluate the imported model on another CSV file', 30_000, async () => {
    await openCsv(page(), newCsv, flowerLabelColumn, { [flowerIgnoredColumn]: 'Ignore' });
    await goTo(page(), 'Models');
    const models = await readTable(modelsTable(page()));
    const imported = models.rows[1][0];
    assert.notEqual(imported, trainedModel);
    await evaluateWith(page(), imported, new RegExp(`^${csvFlowPlan.newFile.replace('.', '\\.')} `));
    const headline = await eventually(async () => {
      const shown = await readHeadline(page());
      assert.equal(shown.title, `${imported} on ${csvFlowPlan.newFile}`);
      return shown;
    });
    assert.equal(headline.examples, csvFlowPlan.newRows);
    assert.ok(headline.accuracy > 1 / 3, `better than chance on new data: ${headline.accuracy}`);
    assert.deepEqual(studio!.pageErrors, [], 'no errors in the page');
  });

  step('train a second, shorter run and compare the two on the Models screen', 60_000, async () => {
    await goTo(page(), 'Data');
    await datasetTab(page(), csvFlowPlan.trainFile).click();
    await datasetTab(page(), csvFlowPlan.trainFile).and(page().locator('[aria-pressed="true"]')).waitFor();
    await goTo(page(), 'Model');
    await waitModelFits(page(), `dense:${csvFlowPlan.hiddenUnits}:relu,dense:${csvFlowPlan.hiddenUnits}:relu,dense:3`);
    await setTrainingSettings(page(), { epochs: csvFlowPlan.secondRunEpochs });
    await startTraining(page());
    await waitCompleted(page(), 50_000);
    await goTo(page(), 'Models');
    const metrics = await compareRuns(page(), trainedModel, secondModel);
    assert.deepEqual(metrics['Epochs'].slice(0, 2), [String(csvFlowPlan.epochs), String(csvFlowPlan.secondRunEpochs)]);
    assert.equal(metrics['Parameters'][0], metrics['Parameters'][1], 'the same network');
    for (const name of ['Test accuracy', 'Test macro F1', 'Training time']) {
      assert.ok(name in metrics, `${name} is compared: ${Object.keys(metrics)}`);
      assert.notEqual(metrics[name][2], '', `${name} has a difference`);
    }
    // Both runs' curves overlaid: two charts.
    const card = section(page(), 'Compare two runs');
    assert.equal(await card.locator('canvas').count(), 2, 'loss and accuracy per epoch');
    assert.deepEqual(studio!.pageErrors, [], 'no errors in the page');
  });
});
