// `nnstudio eval`: a saved model on labelled data, with its own preprocessing; metrics as text or JSON.
import { Command, Option } from 'commander';
import { services } from '../../services';
import { countLimits } from '../../core/model/countLimits';
import { addDataOptions, countWithin, dataSourceFrom, requireOption, threadCount, type DataOptions } from '../options';
import { dataNoteLines, formatRegressionReport, formatReport } from '../report';

interface EvalCommandOptions extends DataOptions {
  model?: string;
  json?: boolean;
  device: 'auto' | 'cpu' | 'cuda';
  batchSize?: number;
  threads?: number;
  tta?: boolean;
}

export function evalCommand(): Command {
  const command = new Command('eval').description('evaluate a saved model on labelled data: accuracy, per-class metrics and confusion matrix, or for regression R², MAE, RMSE, MAPE');
  addDataOptions(command, 'test data: a CSV file, an image folder (one subfolder per class), an IDX images file, or "mnist" (the 10 000 test images)');
  return command
    .option('--model <file>', 'the model file (.safetensors)')
    .addOption(new Option('--device <device>', 'where to run').choices(['auto', 'cpu', 'cuda']).default('auto'))
    .option('--batch-size <n>', 'evaluation batch size', countWithin('--batch-size', countLimits.evaluationBatchSize))
    .option('--threads <n>', 'CPU threads (default: all)', countWithin('--threads', threadCount))
    .option('--tta', 'images: test-time augmentation (the image and its one-pixel shifts averaged; the mirror image too when the model trained with flips)')
    .option('--json', 'print one JSON object (docs/TABLES.md, "eval --json"): {task, accuracy, macro, weighted, perClass, confusion, labels, loss, count} or {task: "regression", r2, mae, rmse, mape, perTarget, loss, count}')
    .action(async (options: EvalCommandOptions) => {
      const modelFile = requireOption(options.model, '--model', 'the model file to evaluate');
      const dataArgument = requireOption(options.data, '--data', 'a CSV file, an image folder, an IDX images file or "mnist"');
      const model = await services.models.load(modelFile);
      const source = await dataSourceFrom(dataArgument, 'test', options);
      const evaluation = await services.evaluation.evaluate(model, source, {
        device: options.device, batchSize: options.batchSize, threads: options.threads,
        ...(options.tta ? services.evaluation.ttaFor(model) : {}),
      });
      process.stderr.write(dataNoteLines(evaluation.dataset.notes));
      const regression = evaluation.regression;
      const count = evaluation.dataset.count;
      if (options.json) {
        const body = regression ? { task: 'regression', ...regression.report } : { task: 'classification', ...evaluation.report };
        process.stdout.write(`${JSON.stringify({ ...body, loss: evaluation.loss, count })}\n`);
      } else {
        const report = regression ? formatRegressionReport(regression.report, evaluation.loss) : formatReport(evaluation.report, evaluation.loss);
        process.stdout.write(`${services.datasets.describe(source)}: ${count} examples\n${report}\n`);
      }
    });
}
