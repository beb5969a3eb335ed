// The benchmark of DESIGN §8: each preset trained on the 60 000 MNIST training images with the data
// already in memory, timed per epoch; the 10 000 test images ride along as the validation set, so the
// engine reports test accuracy after every epoch without timing it (epoch seconds cover training steps).
import type { Dataset } from '../core/data/dataset';
import { loadBuiltinMnist } from '../core/data/mnist';
import { listPresets, type Preset } from '../core/model/presets';
import { formatShape } from '../core/model/shapes';
import * as engine from '../engine';
import { effectivePrecision, type Precision } from '../core/model/precision';

export interface BenchOptions {
  device: engine.DeviceChoice;
  /** Preset names; default: every MNIST preset the device should run (gpuOnly ones on CUDA only). */
  configs?: string[];
  epochs?: number;
  threads?: number;
  /** CUDA: the tensor-core products' arithmetic (default mixed; the CPU computes in FP32). */
  precision?: Precision;
}

export interface BenchResult {
  config: string;
  /** The engine through the Node addon (`nnstudio_bench` reports "nnstudio" for the plain C++ run). */
  framework: 'nnstudio-node';
  device: string;
  epochs: number;
  batchSize: number;
  /** Mean over the epochs after the first (the warm-up); the first epoch's time when there is one epoch. */
  secondsPerEpoch: number;
  epochSeconds: number[];
  testAccuracy1: number;
  testAccuracyN: number;
  threads: number;
  precision: Precision;
}

/** MNIST's images, the only data the bench trains on. */
const MNIST_SHAPE = [1, 28, 28];

/** Does the preset take MNIST as it is (its spec's input is 1x28x28)? resnet_rgb, for 3x32x32 colour images, does not. */
function takesMnist(preset: Preset): boolean {
  return preset.spec.input.length === MNIST_SHAPE.length && preset.spec.input.every((size, i) => size === MNIST_SHAPE[i]);
}

export function benchPresets(device: engine.DeviceKind, names?: string[]): Preset[] {
  const presets = listPresets();
  const all = presets.filter(takesMnist);
  if (!names || names.length === 0) {
    // DESIGN §8's configs; lenet5 is a preset for users, not one of them (name it to run it).
    return all.filter((preset) => preset.name !== 'lenet5' && (device === 'cuda' || !preset.gpuOnly));
  }
  const valid = all.map((p) => p.name).join(', ');
  return names.map((name) => {
    const preset = all.find((candidate) => candidate.name === name);
    if (preset) return preset;
    const other = presets.find((candidate) => candidate.name === name);
    if (other) {
      throw new Error(
        `bench config "${name}" takes ${formatShape(other.spec.input)} inputs, but the bench trains on MNIST ` +
          `(${formatShape(MNIST_SHAPE)}); valid: ${valid}`,
      );
    }
    throw new Error(`unknown bench config "${name}"; valid: ${valid}`);
  });
}

export async function loadBenchData(): Promise<{ train: Dataset; test: Dataset }> {
  const [train, test] = await Promise.all([loadBuiltinMnist('train'), loadBuiltinMnist('test')]);
  return { train, test };
}

export async function runBenchmark(preset: Preset, data: { train: Dataset; test: Dataset }, options: BenchOptions): Promise<BenchResult> {
  const epochs = options.epochs ?? 3;
  const device = engine.resolveDevice(options.device);
  const precision = effectivePrecision(options.precision, device);
  const run = engine.train(preset.spec, data.train, data.test, {
    epochs,
    batchSize: preset.training.batchSize,
    // the preset's recipe (fast_mnist: one-cycle), over the run's epochs
    ...(preset.training.lrSchedule ? { lrSchedule: preset.training.lrSchedule } : {}),
    seed: 0,
    device,
    threads: options.threads ?? 0,
    progressIntervalSeconds: 1,
    precision,
  });
  const result = await run.promise;
  if (result.status !== 'completed') throw new Error(`${preset.name}: training ${result.status}: ${result.message}`);
  const epochSeconds = result.history.map((epoch) => epoch.seconds);
  const timed = epochSeconds.length > 1 ? epochSeconds.slice(1) : epochSeconds;
  const accuracy = (index: number) => result.history[index]?.validationAccuracy ?? Number.NaN;
  return {
    config: preset.name,
    framework: 'nnstudio-node',
    device: result.device,
    epochs,
    batchSize: preset.training.batchSize,
    secondsPerEpoch: timed.reduce((a, b) => a + b, 0) / timed.length,
    epochSeconds,
    testAccuracy1: accuracy(0),
    testAccuracyN: accuracy(epochs - 1),
    threads: options.threads ?? 0,
    precision,
  };
}
