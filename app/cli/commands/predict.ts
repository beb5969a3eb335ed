// `nnstudio predict`: the predicted class and every class probability for each example, as CSV.
import { Command, Option } from 'commander';
import { writeFileAtomic } from '../../core/files/atomic';
import { services } from '../../services';
import { countLimits } from '../../core/model/countLimits';
import { dataNoteLines } from '../report';
import { addDataOptions, countWithin, dataSourceFrom, requireOption, threadCount, type DataOptions } from '../options';

interface PredictCommandOptions extends DataOptions {
  model?: string;
  out?: string;
  device: 'auto' | 'cpu' | 'cuda';
  batchSize?: number;
  threads?: number;
}

export function predictCommand(): Command {
  const command = new Command('predict').description('predict classes and class probabilities; writes a CSV');
  addDataOptions(command, 'data to predict: a CSV file (with or without the label column), an image folder (its images, or one subfolder per class), an IDX images file, or "mnist"');
  return command
    .option('--model <file>', 'the model file (.safetensors)')
    .option('--out <file>', 'the CSV to write (default: standard output)')
    .addOption(new Option('--device <device>', 'where to run').choices(['auto', 'cpu', 'cuda']).default('auto'))
    .option('--batch-size <n>', 'batch size', countWithin('--batch-size', countLimits.evaluationBatchSize))
    .option('--threads <n>', 'CPU threads (default: all)', countWithin('--threads', threadCount))
    .action(async (options: PredictCommandOptions) => {
      const modelFile = requireOption(options.model, '--model', 'the model file to predict with');
      const dataArgument = requireOption(options.data, '--data', 'a CSV file, an image folder, an IDX images file or "mnist"');
      const model = await services.models.load(modelFile);
      const prediction = await services.evaluation.predict(model, await dataSourceFrom(dataArgument, 'test', options), {
        device: options.device, batchSize: options.batchSize, threads: options.threads,
      });
      process.stderr.write(dataNoteLines(prediction.dataset.notes));
      const csv = services.evaluation.predictionsCsv(prediction);
      if (options.out) {
        await writeFileAtomic(options.out, csv);
        process.stderr.write(`wrote ${prediction.dataset.count} predictions to ${options.out}\n`);
      } else {
        process.stdout.write(csv);
      }
    });
}
