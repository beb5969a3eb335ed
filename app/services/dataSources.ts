// Where data comes from: the built-in MNIST, an IDX pair, a CSV file or an image folder. Every face describes data with a
// DataSource and loads it here, so a CSV, an IDX pair or `mnist` behave the same in the CLI, `serve` and
// the desktop window.
import * as fs from 'node:fs';
import Papa from 'papaparse';
import { loadCsv, readTextHead, sniffDelimiter, type CsvOptions } from '../core/data/csv';
import type { CsvEncoding } from '../core/data/encoding';
import type { Dataset } from '../core/data/dataset';
import { DataError } from '../core/data/errors';
import { loadIdx, looksLikeIdx } from '../core/data/idx';
import { nameClassesLike, renameClasses } from '../core/data/classNames';
import { builtinMnistCounts, loadBuiltinMnist } from '../core/data/mnist';
import type { ImageFit } from '../core/data/imageFolder';
import { loadImageFolder } from './imageFolders';
import { isZipFile } from './zipImages';

/** An IDX images file and its labels file (found beside the images when absent). */
export interface IdxPair {
  imagesPath: string;
  labelsPath?: string;
}

/**
 * `classNames` names an IDX or MNIST dataset's classes in their order (the files only number them); an IDX
 * source's `test` pair is its separate test set (MNIST's is its test half).
 */
export type DataSource =
  | { kind: 'mnist'; split: 'train' | 'test'; limit?: number; classNames?: string[] }
  | ({ kind: 'idx'; limit?: number; classNames?: string[]; test?: IdxPair } & IdxPair)
  | { kind: 'csv'; path: string; options?: CsvOptions }
  | FolderSource;

/**
 * An image folder, one subfolder per class (docs/DATA.md "Image folders"). `size` is [height, width] (default:
 * the median size, longer side capped at 64), `channels` 1 or 3 (default: 3 when any image has colour), `fit`
 * a centre crop (default) or a letterbox; `classNames` rename the folders' classes in their order.
 */
export interface FolderSource {
  kind: 'folder';
  path: string;
  size?: [number, number];
  channels?: 1 | 3;
  fit?: ImageFit;
  classNames?: string[];
  limit?: number;
}

/** How a folder is read (size, channels, fit), as CLI flags and API payloads give them. */
export type ImageReading = Pick<FolderSource, 'size' | 'channels' | 'fit'>;

/** What a trained model knows about its data, used to read evaluation and prediction files alike. */
export interface KnownData {
  classLabels: string[];
  /** The training CSV's column encoding, when the model was trained on a CSV. */
  encoding?: CsvEncoding;
  /** [C,H,W] when the model takes images. */
  imageShape?: [number, number, number];
  /** Pixels were divided by this at training time (255 for IDX and MNIST). */
  pixelScale?: number;
  /** Image folders: how images were brought to imageShape. */
  imageFit?: ImageFit;
  /** Classes given names: each class's label as the files write it (IDX label values), like classLabels. */
  labelValues?: string[];
}

/** What a dataset tells about how files like it must be read (its classes, encoding, image shape). */
export function knownData(dataset: Dataset): KnownData {
  const shape = dataset.featureShape;
  return {
    classLabels: dataset.classLabels,
    encoding: dataset.encoding,
    imageShape: shape.length === 3 ? [shape[0], shape[1], shape[2]] : undefined,
    pixelScale: dataset.pixelScale,
    ...(dataset.imageFit ? { imageFit: dataset.imageFit } : {}),
    ...(dataset.labelValues ? { labelValues: dataset.labelValues } : {}),
  };
}

const idxNamePattern = /idx\d|ubyte/i;

const workbookExtension = /\.(xlsx|xlsm|xls|ods)$/i;

/**
 * Reads a `--data` argument: `mnist`, an IDX images file (by its name, e.g. train-images-idx3-ubyte[.gz],
 * or by its magic number, gzipped or not) or a CSV file. `split` picks the built-in MNIST's half.
 */
export async function dataSourceFromArgument(
  argument: string,
  split: 'train' | 'test',
  extra: { labelsPath?: string; csv?: CsvOptions; image?: ImageReading } = {},
): Promise<DataSource> {
  if (argument.toLowerCase() === 'mnist') return { kind: 'mnist', split };
  if (!fs.existsSync(argument)) throw new DataError(argument, 'no such file');
  // a workbook is a ZIP too: the CSV reader says what to do with it
  if (workbookExtension.test(argument)) return { kind: 'csv', path: argument, options: extra.csv };
  // a folder of class folders, or a ZIP of one (read through its unpacked copy: zipImages.ts)
  if (fs.statSync(argument).isDirectory() || isZipFile(argument)) return { kind: 'folder', path: argument, ...definedOf(extra.image ?? {}) };
  if (idxNamePattern.test(argument) || (await looksLikeIdx(argument))) {
    return { kind: 'idx', imagesPath: argument, labelsPath: extra.labelsPath };
  }
  return { kind: 'csv', path: argument, options: extra.csv };
}


export function describeDataSource(source: DataSource): string {
  switch (source.kind) {
    case 'mnist': {
      const [total, name] = source.split === 'train' ? [builtinMnistCounts.train, 'training'] : [builtinMnistCounts.test, 'test'];
      const all = `${spacedThousands(total)} ${name} images`;
      return source.limit !== undefined && source.limit < total
        ? `built-in MNIST (the first ${spacedThousands(source.limit)} of its ${all})`
        : `built-in MNIST (${all})`;
    }
    case 'idx':
      return source.test ? `${source.imagesPath} (test: ${source.test.imagesPath})` : source.imagesPath;
    case 'csv':
    case 'folder':
      return source.path;
  }
}

/** 60000 as "60 000", the way the data's descriptions write counts. */
function spacedThousands(count: number): string {
  return count.toLocaleString('en-US').replace(/,/g, ' ');
}

function definedOf<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as Partial<T>;
}

/** A folder source with the size, channels and fit its loading chose, so a later read gives the same shape. */
export function pinnedSource(source: DataSource, dataset: Dataset): DataSource {
  if (source.kind !== 'folder' || dataset.featureShape.length !== 3) return source;
  const [channels, height, width] = dataset.featureShape;
  return { ...source, size: [height, width], channels: channels === 3 ? 3 : 1, fit: dataset.imageFit ?? 'crop' };
}

/** Loads a source as-is (training data: its classes and encoding are discovered, then named as the source says). */
export async function loadDataSource(source: DataSource): Promise<Dataset> {
  switch (source.kind) {
    case 'mnist':
      return named(await loadBuiltinMnist(source.split, { limit: source.limit }), source);
    case 'idx':
      return named(await loadIdx(source.imagesPath, { labelsPath: source.labelsPath, limit: source.limit }), source);
    case 'csv':
      return loadCsv(source.path, source.options ?? {});
    case 'folder':
      return named(await loadImageFolder(source.path, { size: source.size, channels: source.channels, fit: source.fit, limit: source.limit }), source);
  }
}

function named(dataset: Dataset, source: DataSource & { kind: 'mnist' | 'idx' | 'folder' }): Dataset {
  return source.classNames ? renameClasses(dataset, source.classNames, describeDataSource(source)) : dataset;
}

/** The separate test set of an IDX source with a test pair, read like its training files (same class names). */
export function idxTestSource(source: DataSource): DataSource | undefined {
  return source.kind === 'idx' && source.test ? { kind: 'idx', imagesPath: source.test.imagesPath, labelsPath: source.test.labelsPath } : undefined;
}

/**
 * Loads a source for a trained model: a CSV goes through the model's encoding (same columns, categories,
 * classes); otherwise classes are matched to the model's by name. `unlabeled` reads prediction input.
 */
export async function loadDataSourceFor(
  source: DataSource,
  known: KnownData,
  options: { unlabeled?: boolean } = {},
): Promise<Dataset> {
  if (source.kind === 'csv') {
    const given = source.options ?? {};
    const csvOptions: CsvOptions = known.encoding
      ? { encoding: known.encoding, unlabeled: options.unlabeled, limit: given.limit, delimiter: given.delimiter, decimal: given.decimal, header: given.header }
      : {
          ...given,
          labelColumn: given.labelColumn ?? (await columnNamedLabel(source.path)),
          unlabeled: options.unlabeled,
          classLabels: known.classLabels,
          imageShape: given.imageShape ?? known.imageShape,
          pixelScale: given.pixelScale ?? known.pixelScale,
        };
    return loadCsv(source.path, csvOptions);
  }
  const read = source.kind === 'folder' ? await loadFolderFor(source, known, options.unlabeled ?? false) : await loadDataSource(source);
  if (options.unlabeled && source.kind === 'folder') return read;
  // A model whose classes were named reads the files' own labels ("0".."9") as those names.
  const dataset = known.labelValues && !source.classNames ? nameClassesLike(read, known.labelValues, known.classLabels) : read;
  return matchClasses(dataset, known.classLabels, describeDataSource(source));
}

/** A folder read at a model's image shape and fit (its class folders named like the model's, or unlabeled). */
async function loadFolderFor(source: FolderSource, known: KnownData, unlabeled: boolean): Promise<Dataset> {
  const shape = known.imageShape;
  if (shape && shape[0] !== 1 && shape[0] !== 3) throw new DataError(source.path, `the model takes ${shape.join('x')} inputs, not images of 1 or 3 channels`);
  const dataset = await loadImageFolder(source.path, {
    size: shape ? [shape[1], shape[2]] : source.size,
    channels: shape ? (shape[0] as 1 | 3) : source.channels,
    fit: known.imageFit ?? source.fit,
    limit: source.limit,
    unlabeled,
    classLabels: known.classLabels,
    forModel: shape !== undefined,
  });
  return unlabeled ? dataset : named(dataset, source);
}

/**
 * A model trained on images or IDX data has no CSV encoding; a pixel CSV (Kaggle's MNIST layout) names its
 * label column "label", usually first. Returns that column's name when the header has it.
 */
async function columnNamedLabel(file: string): Promise<string | undefined> {
  const { text } = await readTextHead(file);
  const firstLine = text.split(/\r?\n/, 1)[0] ?? '';
  const fields = Papa.parse<string[]>(firstLine, { delimiter: sniffDelimiter(text) }).data[0] ?? [];
  return fields.map((field) => field.trim()).find((field) => field.toLowerCase() === 'label');
}

/** Renumbers a dataset's labels to `classLabels` by name; a class the model does not know is an error. */
export function matchClasses(dataset: Dataset, classLabels: readonly string[], where: string): Dataset {
  const same = dataset.classLabels.length <= classLabels.length && dataset.classLabels.every((label, i) => label === classLabels[i]);
  if (same) return { ...dataset, classLabels: [...classLabels] };
  const mapping = dataset.classLabels.map((label) => {
    const index = classLabels.indexOf(label);
    if (index < 0) throw new DataError(where, `class "${label}" is not one of the model's classes (${classLabels.join(', ')})`);
    return index;
  });
  const labels = new Int32Array(dataset.count);
  for (let i = 0; i < dataset.count; i++) labels[i] = dataset.labels[i] < 0 ? -1 : mapping[dataset.labels[i]];
  return { ...dataset, labels, classLabels: [...classLabels] };
}
