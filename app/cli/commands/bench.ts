// `nnstudio bench`: the DESIGN §8 configs on MNIST, one JSON line each (seconds per epoch, test accuracy).
import { Command, Option } from 'commander';
import { services } from '../../services';
import { countLimits } from '../../core/model/countLimits';
import { countWithin, precisionOption, threadCount } from '../options';
import type { Precision } from '../../core/model/precision';

interface BenchCommandOptions {
  device: 'auto' | 'cpu' | 'cuda';
  configs?: string;
  epochs: number;
  threads?: number;
  precision?: Precision;
}

export function benchCommand(): Command {
  return new Command('bench')
    .description('time the DESIGN §8 configs on MNIST: one JSON line per config')
    .addOption(new Option('--device <device>', 'where to run').choices(['auto', 'cpu', 'cuda']).default('auto'))
    .option('--configs <names>', 'comma-separated preset names (default: every preset that takes MNIST, the GPU-only ones on CUDA only, lenet5 by name only)')
    .option('--epochs <n>', 'epochs per config; the first is the warm-up', countWithin('--epochs', countLimits.epochs), 3)
    .option('--threads <n>', 'CPU threads (default: all)', countWithin('--threads', threadCount))
    .addOption(precisionOption())
    .action(async (options: BenchCommandOptions) => {
      const device = services.devices.resolve(options.device);
      const presets = services.bench.presets(device, options.configs?.split(',').map((name) => name.trim()).filter(Boolean));
      const data = await services.bench.loadData();
      for (const preset of presets) {
        const result = await services.bench.run(preset, data, { device, epochs: options.epochs, threads: options.threads, precision: options.precision });
        process.stdout.write(`${JSON.stringify(result)}\n`);
      }
    });
}
