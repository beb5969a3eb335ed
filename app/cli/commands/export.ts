// `nnstudio export`: a model file (NN Studio's .safetensors, or a course tool model.m) written as ONNX
// (opset 13, preprocessing included as graph nodes) or as the C course tool's model.m.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { Command, Option } from 'commander';
import { describeOnnxOutput, describePreprocessing } from '../../core/interop/onnxExport';
import { services, type ExportFormat } from '../../services';

const exportFormats = ['onnx', 'course'] as const;

interface ExportOptions {
  model: string;
  out: string;
  format?: (typeof exportFormats)[number];
  json?: boolean;
}

/** --format, else the --out extension: .onnx → onnx, .m → course. */
function chooseFormat(options: ExportOptions): ExportFormat {
  if (options.format) return options.format;
  const extension = path.extname(options.out).toLowerCase();
  if (extension === '.onnx') return 'onnx';
  if (extension === '.m') return 'course';
  throw new Error(`give --format onnx or --format course (the extension of --out ${options.out} says neither .onnx nor .m)`);
}

export function exportCommand(): Command {
  return new Command('export')
    .description('write a model as ONNX (for onnxruntime and other tools) or as the C course tool\'s model.m')
    .requiredOption('--model <file>', 'the model file (.safetensors, or a course tool model.m)')
    .requiredOption('--out <file>', 'where to write (.onnx or .m)')
    .addOption(new Option('--format <format>', 'onnx, or course (model.m: dense sigmoid MLPs only); default from --out\'s extension').choices(exportFormats))
    .option('--json', 'print the result as JSON')
    .action(async (options: ExportOptions) => {
      const format = chooseFormat(options);
      const model = await services.models.load(options.model);
      const out = path.resolve(options.out);
      await services.models.saveAs(out, model, format);
      const bytes = (await fsp.stat(out)).size;
      if (options.json) {
        process.stdout.write(`${JSON.stringify({ path: out, format, bytes, output: format === 'onnx' ? describeOnnxOutput(model.spec) : undefined })}\n`);
        return;
      }
      const lines = [`wrote ${out} (${format === 'onnx' ? 'ONNX, opset 13' : 'course tool model.m'}, ${bytes} bytes)`];
      if (format === 'onnx') {
        lines.push(`input "input": (N, ${model.spec.input.join(', ')}) raw values; preprocessing: ${describePreprocessing(model.preprocessing)}`);
        lines.push(`output "probabilities": ${describeOnnxOutput(model.spec)}; classes: ${model.labels.join(', ')}`);
      }
      process.stdout.write(`${lines.join('\n')}\n`);
    });
}
