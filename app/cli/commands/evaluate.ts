// `nnstudio eval`: a saved model on labelled data, with its own preprocessing; metrics as text or JSON.
import { Command, Option } from 'commander';
import { services } from '../../services';
import { countLimits } from '../../core/model/countLimits';
import { addDataOptions, countWithin, dataSourceFrom, requireOption, threadCount, type DataOptions } from '../options';
import { formatReport } from '../report';

interface EvalCommandOptions extends DataOptions {
  model?: string;
  json?: boolean;
  device: 'auto' | 'cpu' | 'cuda';
  batchSize?: number;
  threads?: number;
}

export function evalCommand(): Command {
  const command = new Command('eval').description('evaluate a saved model on labelled data (accuracy, per-class metrics, confusion matrix)');
  addDataOptions(command, 'test data: a CSV file, an IDX images file, or "mnist" (the 10 000 test images)');
  return command
    .option('--model <file>', 'the model file (.safetensors)')
    .addOption(new Option('--device <device>', 'where to run').choices(['auto', 'cpu', 'cuda']).default('auto'))
    .option('--batch-size <n>', 'evaluation batch size', countWithin('--batch-size', countLimits.evaluationBatchSize))
    .option('--threads <n>', 'CPU threads (default: all)', countWithin('--threads', threadCount))
    .option('--json', 'print one JSON object: {accuracy, macro, weighted, perClass, confusion, labels}')
    .action(async (options: EvalCommandOptions) => {
      const modelFile = requireOption(options.model, '--model', 'the model file to evaluate');
      const dataArgument = requireOption(options.data, '--data', 'a CSV file, an IDX images file or "mnist"');
      const model = await services.models.load(modelFile);
      const source = await dataSourceFrom(dataArgument, 'test', options);
      const evaluation = await services.evaluation.evaluate(model, source, {
        device: options.device, batchSize: options.batchSize, threads: options.threads,
      });
      if (options.json) {
        process.stdout.write(`${JSON.stringify({ ...evaluation.report, loss: evaluation.loss, count: evaluation.dataset.count })}\n`);
      } else {
        process.stdout.write(`${services.datasets.describe(source)}: ${evaluation.dataset.count} examples\n${formatReport(evaluation.report, evaluation.loss)}\n`);
      }
    });
}
