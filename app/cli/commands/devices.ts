// `nnstudio devices`: the CPU and every CUDA GPU the engine can use.
import { Command } from 'commander';
import { services } from '../../services';

const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(1)} GiB`;

export function devicesCommand(): Command {
  return new Command('devices')
    .description('list the CPU and CUDA GPUs available for training')
    .option('--json', 'print JSON')
    .action((options: { json?: boolean }) => {
      const devices = services.devices.list();
      if (options.json) {
        process.stdout.write(`${JSON.stringify(devices)}\n`);
        return;
      }
      for (const device of devices) {
        const detail = device.kind === 'cuda'
          ? `${gib(device.memoryBytes)}, compute capability ${device.computeCapability}`
          : `${device.threads} threads, ${gib(device.memoryBytes)}`;
        process.stdout.write(`${device.kind}:${device.index}  ${device.name}  (${detail})\n`);
      }
      if (!devices.some((device) => device.kind === 'cuda')) process.stdout.write('no CUDA device: training runs on the CPU\n');
    });
}
