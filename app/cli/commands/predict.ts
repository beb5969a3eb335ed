// `nnstudio predict`: the predicted class and every class probability for each example, as CSV.
import { Command, Option } from 'commander';
import Papa from 'papaparse';
import { writeFileAtomic } from '../../core/files/atomic';
import { services, type Prediction } from '../../services';
import { countLimits } from '../../core/model/countLimits';
import { addDataOptions, countWithin, dataSourceFrom, requireOption, threadCount, type DataOptions } from '../options';

interface PredictCommandOptions extends DataOptions {
  model?: string;
  out?: string;
  device: 'auto' | 'cpu' | 'cuda';
  batchSize?: number;
  threads?: number;
}

/**
 * Regression: row, then a `predicted_<target>` column per target in the original units, and the true value
 * (`<target>`) where the file had it.
 */
function regressionCsv(prediction: Prediction, values: Float64Array, names: string[]): string {
  const width = names.length;
  const truth = prediction.dataset.targets;
  const header = ['row', ...names.map((name) => `predicted_${name}`), ...(truth ? names : [])];
  const rows: (string | number)[][] = [];
  for (let i = 0; i < values.length / width; i++) {
    const predicted = Array.from(values.subarray(i * width, (i + 1) * width), (value) => Number(value.toPrecision(7)));
    rows.push([i + 1, ...predicted, ...(truth ? Array.from(truth.subarray(i * width, (i + 1) * width)) : [])]);
  }
  return `${Papa.unparse({ fields: header, data: rows }, { newline: '\n' })}\n`;
}

/** Columns: row, predicted, then one probability column per class; `label` too when the file had labels. */
export function predictionsCsv(prediction: Prediction): string {
  if (prediction.values !== undefined) return regressionCsv(prediction, prediction.values, prediction.targetNames ?? ['target']);
  const classes = prediction.labels.length;
  const labelled = prediction.truth.some((label) => label >= 0);
  const header = ['row', 'predicted', ...(labelled ? ['label'] : []), ...prediction.labels.map((label) => `p_${label}`)];
  const rows: (string | number)[][] = [];
  for (let i = 0; i < prediction.predictions.length; i++) {
    const probabilities = Array.from(prediction.probabilities.subarray(i * classes, (i + 1) * classes), (p) => Number(p.toPrecision(6)));
    const truth = prediction.truth[i];
    rows.push([i + 1, prediction.labels[prediction.predictions[i]], ...(labelled ? [truth >= 0 ? prediction.labels[truth] : ''] : []), ...probabilities]);
  }
  return `${Papa.unparse({ fields: header, data: rows }, { newline: '\n' })}\n`;
}

export function predictCommand(): Command {
  const command = new Command('predict').description('predict classes and class probabilities; writes a CSV');
  addDataOptions(command, 'data to predict: a CSV file (with or without the label column), an IDX images file, or "mnist"');
  return command
    .option('--model <file>', 'the model file (.safetensors)')
    .option('--out <file>', 'the CSV to write (default: standard output)')
    .addOption(new Option('--device <device>', 'where to run').choices(['auto', 'cpu', 'cuda']).default('auto'))
    .option('--batch-size <n>', 'batch size', countWithin('--batch-size', countLimits.evaluationBatchSize))
    .option('--threads <n>', 'CPU threads (default: all)', countWithin('--threads', threadCount))
    .action(async (options: PredictCommandOptions) => {
      const modelFile = requireOption(options.model, '--model', 'the model file to predict with');
      const dataArgument = requireOption(options.data, '--data', 'a CSV file, an IDX images file or "mnist"');
      const model = await services.models.load(modelFile);
      const prediction = await services.evaluation.predict(model, await dataSourceFrom(dataArgument, 'test', options), {
        device: options.device, batchSize: options.batchSize, threads: options.threads,
      });
      const csv = predictionsCsv(prediction);
      if (options.out) {
        await writeFileAtomic(options.out, csv);
        process.stderr.write(`wrote ${prediction.dataset.count} predictions to ${options.out}\n`);
      } else {
        process.stdout.write(csv);
      }
    });
}
