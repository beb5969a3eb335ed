// `nnstudio import`: the C course tool's plain-text model.m as an NN Studio model file (.safetensors).
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { services } from '../../services';

interface ImportOptions {
  from: string;
  out: string;
  labels?: string;
  json?: boolean;
}

export function importCommand(): Command {
  return new Command('import')
    .description('read the C course tool\'s model.m (sigmoid MLP) into an NN Studio model file')
    .requiredOption('--from <file>', 'the model.m file')
    .requiredOption('--out <file>', 'the model file to write (.safetensors)')
    .option('--labels <names>', 'class names, comma-separated (default 0..K-1; 0,1 for one output)')
    .option('--json', 'print the result as JSON')
    .action(async (options: ImportOptions) => {
      const labels = options.labels?.split(',').map((label) => label.trim());
      const model = await services.models.importCourseModel(options.from, { labels });
      const out = path.resolve(options.out);
      await services.models.save(out, model);
      const bytes = (await fsp.stat(out)).size;
      const widths = [model.spec.input[0], ...model.spec.layers.map((layer) => (layer.kind === 'dense' ? layer.units : 0))];
      if (options.json) {
        process.stdout.write(`${JSON.stringify({ path: out, bytes, widths, labels: model.labels, parameters: model.parameters.length })}\n`);
        return;
      }
      process.stdout.write(`wrote ${out}: sigmoid MLP ${widths.join(',')} (${model.parameters.length} parameters), mean squared error head, classes ${model.labels.join(', ')}\n`);
    });
}
