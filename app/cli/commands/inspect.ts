// `nnstudio inspect`: a layer table (output shapes, parameters, multiply-adds) of a model file, a preset
// or a layer string, like Keras' summary(); or, with --data, the column report of a CSV and its task.
import { counted } from '../../core/files/messages';
import { Command, Option } from 'commander';
import { parseImageShape } from '../../core/data/dataset';
import { lossNames, type LossName } from '../../core/model/spec';
import { services } from '../../services';
import { addDataOptions, presetHelp, dataSourceFrom, type DataOptions } from '../options';
import { formatReport } from '../report';

interface InspectOptions extends DataOptions {
  model?: string;
  preset?: string;
  layers?: string;
  input?: string;
  classes?: string;
  loss?: LossName;
  json?: boolean;
}

export function inspectCommand(): Command {
  const command = new Command('inspect')
    .description('show a model\'s layers with output shapes and parameter counts, a CSV\'s columns or an image folder\'s classes (--data)')
    .option('--model <file>', 'a model file (.safetensors)')
    .option('--preset <name>', `a built-in preset: ${presetHelp()}`)
    .option('--layers <spec>', 'a layer string (docs/LAYERS.md)')
    .option('--input <shape>', 'input shape for --preset/--layers: CxHxW for images or F for features (default 1x28x28)', '1x28x28')
    .option('--classes <n>', 'number of classes for --preset/--layers', '10')
    .addOption(new Option('--loss <loss>', 'loss for --layers').choices(lossNames))
    .option('--json', 'print the table as JSON (docs/DATA.md describes the --data form)');
  return addDataOptions(command, 'a CSV file: each column\'s type, missing values, distinct values and histogram, and the task; an image folder (or a ZIP of one): its classes, image counts, the shape read and what was left out')
    .action(async (options: InspectOptions) => {
      const given = [options.model, options.preset, options.layers, options.data].filter((value) => value !== undefined);
      if (given.length !== 1) throw new Error('give exactly one of --model, --preset, --layers or --data');
      if (options.data !== undefined) {
        const source = await dataSourceFrom(options.data, 'train', options);
        if (source.kind === 'folder') {
          const folder = await services.datasets.inspectFolder(source);
          process.stdout.write(`${options.json ? JSON.stringify(folder) : services.datasets.formatFolderInspection(folder)}\n`);
          return;
        }
        const inspection = await services.datasets.inspect(source);
        process.stdout.write(`${options.json ? JSON.stringify(inspection) : services.datasets.formatInspection(inspection)}\n`);
        return;
      }
      const model = options.model !== undefined ? await services.models.load(options.model) : undefined;
      const spec = model?.spec ?? services.models.build(
        { preset: options.preset, layers: options.layers, loss: options.loss },
        parseInputShape(options.input ?? '1x28x28'),
        parseClasses(options.classes ?? '10'),
      ).spec;
      if (options.json) {
        process.stdout.write(`${JSON.stringify({ spec, ...services.models.layerTable(spec), labels: model?.labels, training: model?.training, metrics: model?.metrics })}\n`);
        return;
      }
      const lines = [services.models.formatLayerTable(spec)];
      if (model) {
        lines.push(`classes: ${model.labels.join(', ')}`);
        lines.push(`preprocessing: ${model.preprocessing.kind}${model.preprocessing.pixelScale ? `, pixels / ${model.preprocessing.pixelScale}` : ''}`);
        if (model.training) {
          const last = model.training.history[model.training.history.length - 1];
          lines.push(`trained: ${counted(model.training.history.length, 'epoch')} in ${model.training.seconds.toFixed(1)} s on ${model.training.device}` +
            (last?.trainLoss != null ? `, final loss ${last.trainLoss.toFixed(4)}` : ''));
        }
        const test = model.metrics?.test as Parameters<typeof formatReport>[0] | undefined;
        if (test) lines.push(`test accuracy: ${(test.accuracy * 100).toFixed(2)} %, macro F1 ${test.macro.f1.toFixed(4)}`);
      }
      process.stdout.write(`${lines.join('\n')}\n`);
    });
}

function parseInputShape(text: string): number[] {
  if (/^\d+$/.test(text.trim())) return [Number(text)];
  return parseImageShape(text);
}

function parseClasses(text: string): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < 2) throw new Error(`--classes must be an integer ≥ 2, got "${text}"`);
  return Number(text);
}
