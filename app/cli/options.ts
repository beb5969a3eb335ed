// Parsing of option values shared by the commands: numbers, column references, data sources.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { CsvOptions } from '../core/data/csv';
import { splitClassNames } from '../core/data/classNames';
import { parseImageShape } from '../core/data/dataset';
import { parseImageSize } from '../core/data/imageFolder';
import type { ImageReading } from '../services/dataSources';
import { listPresets, presetNames } from '../core/model/presets';
import { countLimits, countRange, isCountWithin, type CountLimit } from '../core/model/countLimits';
import { precisions } from '../core/model/precision';
import { services, type DataSource } from '../services';

export function positiveInteger(name: string) {
  return (value: string): number => {
    if (!/^\d+$/.test(value.trim()) || Number(value) < 1) throw new InvalidArgumentError(`${name} must be a positive integer, got "${value}"`);
    return Number(value);
  };
}

/** A count within the engine's bounds (core/model/countLimits.ts), refused here before it reaches the engine. */
export function countWithin(name: string, limit: CountLimit) {
  return (value: string): number => {
    const text = value.trim();
    const number = Number(text);
    if (!/^\d+$/.test(text) || !isCountWithin(number, limit)) {
      throw new InvalidArgumentError(`${name} ${countRange(limit)}, got ${/^-?\d+$/.test(text) ? text : JSON.stringify(value)}`);
    }
    return number;
  };
}

/** --threads: 1 or more (leaving it out means all hardware threads). */
export const threadCount: CountLimit = { min: 1, max: countLimits.threads.max };

export function nonNegativeInteger(name: string) {
  return (value: string): number => {
    if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError(`${name} must be a whole number ≥ 0, got "${value}"`);
    return Number(value);
  };
}

export function positiveNumber(name: string) {
  return (value: string): number => {
    const number = Number(value);
    if (value.trim() === '' || !Number.isFinite(number) || number <= 0) throw new InvalidArgumentError(`${name} must be a positive number, got "${value}"`);
    return number;
  };
}

export function fraction(name: string) {
  return (value: string): number => {
    const number = Number(value);
    if (value.trim() === '' || !(number >= 0 && number < 1)) throw new InvalidArgumentError(`${name} must be at least 0 and below 1, got "${value}"`);
    return number;
  };
}

/** A column by header name, or by 0-based index when it is an integer (negative counts from the end). */
export function columnRef(value: string): string | number {
  return /^-?\d+$/.test(value.trim()) ? Number(value) : value;
}

export function columnList(value: string): Array<string | number> {
  return value.split(',').map((item) => columnRef(item.trim())).filter((item) => item !== '');
}

/** Missing markers: comma-separated, kept as written (an empty item is the empty cell). */
export function markerList(value: string): string[] {
  return value.split(',').map((item) => item.trim());
}

export interface DataOptions {
  data?: string;
  labels?: string;
  classNames?: string[];
  labelColumn?: string | number;
  imageShape?: string;
  pixelScale?: number;
  delimiter?: string;
  decimal?: ',' | '.';
  header?: boolean;
  categorical?: Array<string | number>;
  ignore?: Array<string | number>;
  limit?: number;
  task?: 'classification' | 'regression';
  targetColumns?: Array<string | number>;
  missingValues?: string[];
  dates?: 'parts' | 'ignore';
  imageSize?: [number, number];
  channels?: string;
  fit?: 'crop' | 'letterbox';
}

/** Adds the options that describe how to read a data file. */
export function addDataOptions(command: Command, dataHelp: string): Command {
  return command
    .option('--data <source>', dataHelp)
    .option('--labels <file>', 'IDX labels file (default: found beside the images file)')
    .option('--class-names <names>', 'IDX or mnist: the classes\' names in label order, comma-separated, e.g. T-shirt,Trouser,Pullover,... (default: the label numbers)', splitClassNames)
    .option('--label-column <name|index>', 'CSV label column by header name or 0-based index (default: the last column)', columnRef)
    .option('--image-shape <CxHxW>', 'reshape CSV features into images, e.g. 1x28x28')
    .option('--pixel-scale <n>', 'with --image-shape: divide pixel values by n (default 255; 1 keeps them)', positiveNumber('--pixel-scale'))
    .option('--delimiter <char>', 'CSV delimiter (default: detected)')
    .addOption(new Option('--decimal <mark>', 'CSV decimal mark: "," for numbers written 162,5 (default: detected; "," only in files whose delimiter is not a comma)').choices([',', '.']))
    .addOption(new Option('--header', 'the CSV has a header row (default: detected)'))
    .addOption(new Option('--no-header', 'the CSV has no header row'))
    .option('--categorical <columns>', 'CSV columns to one-hot encode, comma-separated names or indices', columnList)
    .option('--ignore <columns>', 'CSV columns to leave out, comma-separated names or indices', columnList)
    .option('--limit <n>', 'read only the first n examples', positiveInteger('--limit'))
    .addOption(new Option('--task <task>', 'CSV: classification or regression (default: inferred from the label column)').choices(['classification', 'regression']))
    .option('--target-columns <columns>', 'CSV: several columns to predict (regression), comma-separated names or indices', columnList)
    .option('--missing-values <markers>', 'CSV: cell texts that mean missing, comma-separated (default: empty, NA, N/A, NaN, null, ?, -)', markerList)
    .option('--image-size <HxW>', 'image folder: resize every image to HEIGHTxWIDTH, or N for NxN (default: the median size, longer side capped at 64)', imageSizeArgument)
    .addOption(new Option('--channels <n>', 'image folder: 1 (grayscale) or 3 (RGB) (default: 3 when any image has colour)').choices(['1', '3']))
    .addOption(new Option('--fit <how>', 'image folder: centre crop to the size, or letterbox (fit inside, black bars) (default crop)').choices(['crop', 'letterbox']))
    .addOption(new Option('--dates <how>', 'CSV date columns: numeric parts (year, month, day, weekday) or left out (default ignore)').choices(['parts', 'ignore']));
}

export function csvOptionsFrom(options: DataOptions): CsvOptions {
  const csv: CsvOptions = {};
  if (options.labelColumn !== undefined) csv.labelColumn = options.labelColumn;
  if (options.imageShape !== undefined) {
    csv.imageShape = parseImageShape(options.imageShape);
    // Pixel CSVs hold 0-255 values; scaled to [0,1] like IDX images, so the same models fit both.
    csv.pixelScale = options.pixelScale ?? 255;
  } else if (options.pixelScale !== undefined) {
    throw new Error('--pixel-scale applies to pixel CSVs read with --image-shape');
  }
  if (options.delimiter !== undefined) csv.delimiter = options.delimiter;
  if (options.decimal !== undefined) csv.decimal = options.decimal;
  if (options.header !== undefined) csv.header = options.header;
  if (options.categorical !== undefined) csv.categorical = options.categorical;
  if (options.ignore !== undefined) csv.ignoreColumns = options.ignore;
  if (options.limit !== undefined) csv.limit = options.limit;
  if (options.task !== undefined) csv.task = options.task;
  if (options.targetColumns !== undefined) csv.targetColumns = options.targetColumns;
  if (options.missingValues !== undefined) csv.missingMarkers = options.missingValues;
  if (options.dates !== undefined) csv.dates = options.dates;
  return csv;
}

function imageSizeArgument(text: string): [number, number] {
  try {
    return parseImageSize(text);
  } catch (error) {
    throw new InvalidArgumentError(error instanceof Error ? error.message : String(error));
  }
}

/** The image folder flags, or undefined when none is given. */
function imageReadingFrom(options: DataOptions): ImageReading | undefined {
  const reading: ImageReading = {
    ...(options.imageSize ? { size: options.imageSize } : {}),
    ...(options.channels ? { channels: options.channels === '3' ? 3 : 1 } : {}),
    ...(options.fit ? { fit: options.fit } : {}),
  };
  return Object.keys(reading).length > 0 ? reading : undefined;
}

export async function dataSourceFrom(argument: string, split: 'train' | 'test', options: DataOptions): Promise<DataSource> {
  const image = imageReadingFrom(options);
  const source = await services.datasets.fromArgument(argument, split, { labelsPath: options.labels, csv: csvOptionsFrom(options), image });
  if (image && source.kind !== 'folder') throw new Error(`--image-size, --channels and --fit apply to image folders; ${argument} is not a folder`);
  if (source.kind === 'csv') {
    if (options.classNames !== undefined) throw new Error(`--class-names applies to IDX files, mnist and image folders; a CSV's classes are the values of its label column (${argument})`);
    return source;
  }
  return {
    ...source,
    ...(options.limit !== undefined ? { limit: options.limit } : {}),
    ...(options.classNames !== undefined ? { classNames: options.classNames } : {}),
  };
}

export function requireOption<T>(value: T | undefined, name: string, hint: string): T {
  if (value === undefined) throw new Error(`${name} is required: ${hint}`);
  return value;
}

/** The presets as --preset takes them: "tiny-cnn (seed000), ..."; a broken install still gets its help. */
export function presetHelp(): string {
  try {
    return listPresets().map(presetNames).join(', ');
  } catch {
    return 'see nnstudio inspect --preset';
  }
}

/** An output file's folder must exist, and the file must not be a folder (checked before any work). */
export function checkOutputPath(file: string, flag = '--out'): void {
  const folder = path.dirname(path.resolve(file));
  if (!fs.existsSync(folder)) throw new Error(`${flag} ${file}: the folder ${folder} does not exist`);
  if (fs.existsSync(file) && fs.statSync(file).isDirectory()) throw new Error(`${flag} ${file}: is a folder`);
}

/** --precision: the CUDA tensor-core products' arithmetic (core/model/precision.ts). */
export function precisionOption(): Option {
  return new Option('--precision <kind>', 'CUDA: the tensor-core products\' arithmetic (convolutions, small MLPs): mixed (the default: BF16 products in the convolutions, a 7-bit mantissa, FP32 sums and weights; FP16 products with loss scaling on GPUs without BF16; the fastest), tf32 (a 10-bit mantissa, as PyTorch\'s default) or fp32 (FP32 accuracy); docs/PRECISION.md. The CPU computes in FP32')
    .choices([...precisions]);
}
