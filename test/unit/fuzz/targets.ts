// The readers under fuzz, one target each: how a case's input is made from a seed (and mutated), how the
// reader is called, and what counts as a correct outcome: a valid result, or the reader's documented error
// (DataError, ModelFileError, CourseModelError, RunFileError) whose message starts with the file's name,
// fits on one line and, for CSV cells, names the row. Anything else throws a FuzzFailure.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { loadCsv, type CsvOptions } from '../../../app/core/data/csv';
import { checkDataset, type Dataset } from '../../../app/core/data/dataset';
import { csvEncodingSchema } from '../../../app/core/data/encoding';
import { applyImputation, fitImputation, hasMissing, imputationStrategies } from '../../../app/core/data/imputation';
import { DataError } from '../../../app/core/data/errors';
import { loadIdx, type IdxOptions } from '../../../app/core/data/idx';
import { preprocessingSchema } from '../../../app/core/data/preprocess';
import { CourseModelError, courseNetworkToModel, parseCourseModel } from '../../../app/core/interop/courseModel';
import { decodeCheckpoint, encodeCheckpoint } from '../../../app/core/model/checkpointFile';
import { decodeModel, encodeModel, ModelFileError, type Model } from '../../../app/core/model/modelFile';
import { classCount, parameterCount } from '../../../app/core/model/shapes';
import { decodeRun, encodeRun, RunFileError, summarizeRun } from '../../../app/core/runs/runFile';
import {
  dataSourceFromArgument, knownData, loadDataSource, loadDataSourceFor, type KnownData,
} from '../../../app/services/dataSources';
import {
  edgeUint32, encodeText, gzipMaybeCorrupt, mutateBytes, mutateCsvRows, mutateJsonText, mutateText, type Log,
} from './mutate';
import type { Random } from './random';
import { checkpointSeeds, courseSeeds, csvSeeds, idxSeeds, modelSeeds, runSeeds, type CsvSeed } from './seeds';

/** A wrong outcome: an undocumented error, an unclear message, or an invalid result. */
export class FuzzFailure extends Error {
  override readonly name = 'FuzzFailure';
}

export interface FuzzCase {
  /** What was done to which seed, for the failure report. */
  description: string;
  /** Calls the reader in `folder` (an empty scratch folder); resolves 'accepted' or 'rejected', or throws FuzzFailure. */
  run(folder: string): Promise<'accepted' | 'rejected'>;
}

export interface FuzzTarget {
  name: string;
  /** What a correct rejection is, for the report. */
  documentedError: string;
  makeCase(random: Random): FuzzCase;
}

// ---- outcome checks ----

function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message.slice(0, 500)}\n${error.stack?.split('\n').slice(1, 6).join('\n') ?? ''}`;
  return `a thrown ${typeof error}: ${String(error).slice(0, 200)}`;
}

/** A rejection must be `type`, start with `name`, be one line and say something (no "undefined", no "[object"). */
function expectDocumented(error: unknown, type: new (...args: never[]) => Error, name: string): 'rejected' {
  if (error instanceof FuzzFailure) throw error;
  if (!(error instanceof type)) throw new FuzzFailure(`undocumented error (expected ${type.name}): ${describeError(error)}`);
  const message = error.message;
  if (!message.startsWith(name)) throw new FuzzFailure(`the message does not start with the file name ${JSON.stringify(name)}: ${message.slice(0, 300)}`);
  if (message.includes('\n')) throw new FuzzFailure(`the message spans several lines: ${JSON.stringify(message.slice(0, 300))}`);
  if (message.length > 1500) throw new FuzzFailure(`the message is ${message.length} characters long: ${message.slice(0, 200)}…`);
  if (/\bundefined\b|\[object /.test(message.replace(/"[^"]*"/g, '""'))) {
    throw new FuzzFailure(`an unclear message: ${message.slice(0, 300)}`);
  }
  return 'rejected';
}

/** A CSV cell problem names the row (and column): the user must find it in a large file. */
function expectCsvPlace(error: unknown): void {
  if (!(error instanceof DataError)) return;
  const cellProblem = /is not a number|field\(s\), expected|the label is empty|quoted field|malformed quotes|was not seen in the training|is out of the 32-bit float range|is not one of the model's classes/;
  if (cellProblem.test(error.message) && error.row === undefined) throw new FuzzFailure(`a cell problem without its row: ${error.message.slice(0, 300)}`);
}

function expectValid(condition: boolean, problem: string): void {
  if (!condition) throw new FuzzFailure(`an invalid result: ${problem}`);
}

/**
 * A valid dataset: finite features, except NaN for a missing CSV cell, which imputation fitted on the rows
 * must fill (every strategy, with indicators); finite regression targets.
 */
function checkLoadedDataset(dataset: Dataset, random?: Random): void {
  try {
    checkDataset(dataset);
  } catch (error) {
    throw new FuzzFailure(`an invalid result: ${(error as Error).message}`);
  }
  expectValid(dataset.count >= 1, `${dataset.count} examples`);
  const csv = dataset.encoding !== undefined;
  for (let i = 0; i < dataset.features.length; i++) {
    const value = dataset.features[i];
    if (!Number.isFinite(value) && !(csv && Number.isNaN(value))) throw new FuzzFailure(`an invalid result: feature value ${i} is ${value}`);
  }
  if (dataset.targets !== undefined) {
    for (let i = 0; i < dataset.targets.length; i++) {
      if (!Number.isFinite(dataset.targets[i])) throw new FuzzFailure(`an invalid result: target value ${i} is ${dataset.targets[i]}`);
    }
  }
  if (csv && dataset.featureShape.length === 1) {
    const strategy = random?.pick([...imputationStrategies]) ?? 'mean';
    const rows = Array.from({ length: dataset.count }, (_, i) => i);
    const imputed = applyImputation(fitImputation(dataset, rows, { default: { strategy, indicator: true } }), dataset);
    expectValid(!hasMissing(imputed), `NaN left after ${strategy} imputation`);
    checkDataset(imputed);
  }
}

/** Equal element by element, NaN equal to NaN. */
function sameValues(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) return false;
  return true;
}

async function writeFile(folder: string, name: string, bytes: Uint8Array): Promise<string> {
  const file = path.join(folder, name);
  await fs.promises.writeFile(file, bytes);
  return file;
}

// ---- CSV ----

function mutatedCsv(random: Random, log: Log): { seed: CsvSeed; bytes: Uint8Array } {
  const seedIndex = random.int(csvSeeds.length);
  const seed = csvSeeds[seedIndex];
  log.push(`CSV seed ${seedIndex}`);
  let text = seed.text;
  const rounds = random.range(1, 3);
  for (let i = 0; i < rounds; i++) text = random.chance(0.6) ? mutateCsvRows(random, text, seed.delimiter, log) : mutateText(random, text, log);
  let bytes = encodeText(random, text, log);
  if (random.chance(0.15)) bytes = mutateBytes(random, bytes, log, csvSeeds.map((other) => Buffer.from(other.text)));
  return { seed, bytes };
}

/** Options a user could give: the seed's own, or others picked at random (header, label column, ...). */
function csvOptions(random: Random, seed: CsvSeed, log: Log): CsvOptions {
  const options: CsvOptions = { ...seed.options };
  if (random.chance(0.2)) options.header = random.chance(0.5);
  if (random.chance(0.15)) options.labelColumn = random.pick([0, 1, -1, -2, 7, -9, 'label', 'species', 'x', ' color ']);
  if (random.chance(0.1)) options.categorical = [random.pick([0, 1, 2, 'color', 'b'])];
  if (random.chance(0.1)) options.ignoreColumns = [random.pick([0, 1, 'id', 'note'])];
  if (random.chance(0.1)) options.unlabeled = true;
  if (random.chance(0.1)) options.limit = random.range(1, 5);
  if (random.chance(0.1)) options.delimiter = random.pick([',', ';', 'tab', '|', '\\t']);
  if (random.chance(0.05)) options.imageShape = random.pick([[1, 2, 2], [2, 1, 2], [1, 1, 4]]);
  if (random.chance(0.05)) options.pixelScale = random.pick([255, 1, 1e-30]);
  if (random.chance(0.05)) options.classLabels = random.pick([['setosa', 'versicolor', 'virginica'], ['0', '1'], ['x', 'y', 'z']]);
  if (random.chance(0.05)) options.missingMarkers = random.pick([[], ['?'], ['', 'NA', 'x'], ['missing', '-999']]);
  if (random.chance(0.05)) options.task = random.pick(['classification', 'regression'] as const);
  if (random.chance(0.03)) options.targetColumns = random.pick([[0, 1], ['price', 'x1'], [-1]]);
  if (random.chance(0.05)) options.dates = random.pick(['parts', 'ignore'] as const);
  log.push(`options ${JSON.stringify(options)}`);
  return options;
}

const csvTarget: FuzzTarget = {
  name: 'csv',
  documentedError: 'DataError',
  makeCase(random) {
    const log: Log = [];
    const { seed, bytes } = mutatedCsv(random, log);
    const options = csvOptions(random, seed, log);
    return {
      description: log.join('; '),
      async run(folder) {
        const file = await writeFile(folder, 'data.csv', bytes);
        let dataset: Dataset;
        try {
          dataset = await loadCsv(file, options);
        } catch (error) {
          expectCsvPlace(error);
          return expectDocumented(error, DataError, 'data.csv');
        }
        checkLoadedDataset(dataset, random);
        const encoding = csvEncodingSchema.safeParse(dataset.encoding);
        expectValid(encoding.success, `its encoding would not load from a model file: ${encoding.error?.issues[0]?.message}`);
        // The training file read back through its own encoding (evaluating on the training data) must work.
        try {
          const again = await loadCsv(file, { encoding: dataset.encoding, delimiter: options.delimiter, header: options.header, limit: options.limit });
          expectValid(again.count === dataset.count, `read back through its encoding: ${again.count} rows, first ${dataset.count}`);
          expectValid(sameValues(again.features, dataset.features), 'read back through its encoding: other feature values');
          expectValid(sameValues(again.labels, dataset.labels), 'read back through its encoding: other labels');
          if (dataset.targets !== undefined) expectValid(again.targets !== undefined && sameValues(again.targets, dataset.targets), 'read back through its encoding: other targets');
        } catch (error) {
          if (error instanceof FuzzFailure) throw error;
          throw new FuzzFailure(`loads, but not through its own encoding: ${describeError(error)}`);
        }
        return 'accepted';
      },
    };
  },
};

// ---- IDX ----

/** Header fields set to edge values: the count, a side, the type byte, the dimension count, the magic. */
function mutateIdxHeader(random: Random, bytes: Uint8Array, log: Log): Uint8Array {
  if (bytes.length < 4) return mutateBytes(random, bytes, log);
  const copy = Buffer.from(bytes);
  const dimCount = Math.min(copy[3] ?? 0, Math.floor((copy.length - 4) / 4));
  switch (random.int(4)) {
    case 0: {
      if (dimCount === 0) return bytes;
      const dim = random.int(dimCount);
      const old = copy.readUInt32BE(4 + 4 * dim);
      const value = random.pick([...edgeUint32, old + 1, Math.max(old - 1, 0), old * 2]) >>> 0;
      copy.writeUInt32BE(value, 4 + 4 * dim);
      log.push(`dimension ${dim} = ${value}`);
      break;
    }
    case 1:
      copy[2] = random.pick([0x08, 0x09, 0x0b, 0x0c, 0x0d, 0x0e, 0x00, 0xff]);
      log.push(`type byte 0x${copy[2].toString(16)}`);
      break;
    case 2:
      copy[3] = random.pick([0, 1, 2, 3, 4, 255]);
      log.push(`dimension count ${copy[3]}`);
      break;
    default:
      copy[random.int(2)] = random.pick([0x01, 0x1f, 0x8b, 0xff]);
      log.push('magic broken');
  }
  return new Uint8Array(copy);
}

let bombCache: Uint8Array | undefined;
/** A gzip bomb: a valid 1-image header, then 1 GiB of zeros, as 1 MiB gzip members (about 1 MB on disk). */
function gzipBomb(header: Uint8Array): Uint8Array {
  if (bombCache === undefined) {
    const member = zlib.gzipSync(Buffer.alloc(1 << 20), { level: 9 });
    bombCache = new Uint8Array(Buffer.concat(Array.from({ length: 1024 }, () => member)));
  }
  return new Uint8Array(Buffer.concat([zlib.gzipSync(header), bombCache]));
}

function mutatedIdxFile(random: Random, bytes: Uint8Array, what: string, log: Log): { bytes: Uint8Array; gz: boolean } {
  let result = bytes;
  const rounds = random.range(0, 2);
  for (let i = 0; i < rounds; i++) {
    log.push(`${what}:`);
    result = random.chance(0.5) ? mutateIdxHeader(random, result, log) : mutateBytes(random, result, log, idxSeeds.map((seed) => seed.labels));
  }
  if (random.chance(0.02)) {
    log.push(`${what}: gzip bomb (1 GiB of zeros after the header)`);
    return { bytes: gzipBomb(result.subarray(0, 16)), gz: true };
  }
  if (random.chance(0.35)) {
    log.push(`${what}:`);
    return { bytes: gzipMaybeCorrupt(random, result, log), gz: true };
  }
  return { bytes: result, gz: false };
}

const idxTarget: FuzzTarget = {
  name: 'idx',
  documentedError: 'DataError',
  makeCase(random) {
    const log: Log = [];
    const seedIndex = random.int(idxSeeds.length);
    const seed = idxSeeds[seedIndex];
    log.push(`IDX seed ${seedIndex}`);
    const images = mutatedIdxFile(random, seed.images, 'images', log);
    const labels = random.chance(0.7) ? mutatedIdxFile(random, seed.labels, 'labels', log) : { bytes: seed.labels, gz: false };
    if (random.chance(0.05)) {
      log.push('images and labels swapped');
      [images.bytes, labels.bytes] = [labels.bytes, images.bytes];
    }
    const byName = random.chance(0.3);
    const options: IdxOptions = {};
    if (random.chance(0.1)) options.limit = random.range(1, 8);
    if (random.chance(0.1)) options.transpose = true;
    if (random.chance(0.1)) options.classLabels = random.pick([['0', '1', '2'], ['5', '6', '7'], ['a']]);
    log.push(`labels ${byName ? 'found by name' : 'given'}; options ${JSON.stringify(options)}`);
    return {
      description: log.join('; '),
      async run(folder) {
        const imagesName = `train-images-idx3-ubyte${images.gz ? '.gz' : ''}`;
        const labelsName = `train-labels-idx1-ubyte${labels.gz ? '.gz' : ''}`;
        const imagesFile = await writeFile(folder, imagesName, images.bytes);
        const labelsFile = await writeFile(folder, labelsName, labels.bytes);
        let dataset: Dataset;
        try {
          dataset = await loadIdx(imagesFile, byName ? options : { ...options, labelsPath: labelsFile });
        } catch (error) {
          const named = error instanceof DataError && path.basename(error.file) === labelsName ? labelsName : imagesName;
          return expectDocumented(error, DataError, named);
        }
        checkLoadedDataset(dataset);
        expectValid(dataset.features.every((value) => value >= 0 && value <= 1), 'pixels outside [0, 1]');
        expectValid(options.limit === undefined || dataset.count <= options.limit, `${dataset.count} examples over the limit ${options.limit}`);
        return 'accepted';
      },
    };
  },
};

// ---- the dataset loader (CLI, serve and the window: --data FILE) ----

const knownCache = new Map<number, KnownData>();

const datasetTarget: FuzzTarget = {
  name: 'dataset',
  documentedError: 'DataError',
  makeCase(random) {
    const log: Log = [];
    const csv = random.chance(0.6);
    let files: { name: string; bytes: Uint8Array }[];
    let csvOptionsGiven: CsvOptions | undefined;
    let knownSeed = -1;
    if (csv) {
      const { seed, bytes } = mutatedCsv(random, log);
      files = [{ name: random.pick(['data.csv', 'data.tsv', 'data.txt', 'data']), bytes }];
      csvOptionsGiven = seed.options;
      if (random.chance(0.4)) knownSeed = csvSeeds.indexOf(seed);
    } else {
      const seed = random.pick(idxSeeds);
      const images = mutatedIdxFile(random, seed.images, 'images', log);
      const labels = mutatedIdxFile(random, seed.labels, 'labels', log);
      const plainName = random.chance(0.2); // found by its magic number, not its name
      files = [
        { name: plainName ? 'digits.bin' : `t10k-images-idx3-ubyte${images.gz ? '.gz' : ''}`, bytes: images.bytes },
        { name: `t10k-labels-idx1-ubyte${labels.gz ? '.gz' : ''}`, bytes: labels.bytes },
      ];
    }
    const forModel = knownSeed >= 0;
    log.push(forModel ? `read for a model trained on CSV seed ${knownSeed}` : 'read as training data');
    return {
      description: log.join('; '),
      async run(folder) {
        const written = await Promise.all(files.map((file) => writeFile(folder, file.name, file.bytes)));
        let known: KnownData | undefined;
        if (forModel) {
          known = knownCache.get(knownSeed);
          if (known === undefined) {
            const seed = csvSeeds[knownSeed];
            const seedFile = await writeFile(folder, 'seed.csv', Buffer.from(seed.text));
            known = knownData(await loadCsv(seedFile, seed.options));
            knownCache.set(knownSeed, known);
          }
        }
        let dataset: Dataset;
        try {
          const source = await dataSourceFromArgument(written[0], 'test', { csv: csvOptionsGiven });
          dataset = known ? await loadDataSourceFor(source, known) : await loadDataSource(source);
        } catch (error) {
          const named = error instanceof DataError ? path.basename(error.file) : files[0].name;
          if (!files.some((file) => file.name === named)) throw new FuzzFailure(`the error names ${named}, not an input file: ${describeError(error)}`);
          expectCsvPlace(error);
          return expectDocumented(error, DataError, named);
        }
        checkLoadedDataset(dataset);
        return 'accepted';
      },
    };
  },
};

// ---- model files ----

function readSafetensors(bytes: Uint8Array): { header: string; data: Uint8Array } {
  const buffer = Buffer.from(bytes);
  const length = Number(buffer.readBigUInt64LE(0));
  return { header: buffer.subarray(8, 8 + length).toString('utf8'), data: bytes.subarray(8 + length) };
}

/** A safetensors file with its JSON mutated (the outer header, or a metadata entry's JSON), or its bytes. */
function mutateSafetensors(random: Random, seeds: readonly Uint8Array[], log: Log): Uint8Array {
  const seedIndex = random.int(seeds.length);
  log.push(`seed ${seedIndex}`);
  let bytes = seeds[seedIndex];
  const rounds = random.range(1, 2);
  for (let round = 0; round < rounds; round++) {
    if (random.chance(0.3) || bytes.length < 8) {
      bytes = mutateBytes(random, bytes, log, seeds);
      continue;
    }
    let parts: { header: string; data: Uint8Array };
    try {
      parts = readSafetensors(bytes);
      JSON.parse(parts.header);
    } catch {
      bytes = mutateBytes(random, bytes, log, seeds);
      continue;
    }
    let header = parts.header;
    let data = parts.data;
    const choice = random.int(4);
    if (choice <= 1) {
      // a metadata entry's own JSON (nnstudio, nnstudio_checkpoint)
      // The header is valid JSON but, after an earlier round, not always an object ("null", "[]").
      const parsed = JSON.parse(header) as { __metadata__?: Record<string, string> } | null;
      const outer = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : {};
      const metadata = outer.__metadata__;
      const keys = metadata !== null && typeof metadata === 'object' && !Array.isArray(metadata) ? Object.keys(metadata) : [];
      const key = keys.length > 0 ? random.pick(keys) : undefined;
      let inner: string | undefined;
      try {
        inner = key === undefined ? undefined : JSON.stringify(JSON.parse(metadata![key]));
      } catch {
        inner = undefined;
      }
      if (key !== undefined && inner !== undefined) {
        metadata![key] = mutateJsonText(random, inner, log, key);
        header = JSON.stringify(outer);
      } else {
        header = mutateJsonText(random, header, log, 'header');
      }
    } else if (choice === 2) {
      header = mutateJsonText(random, header, log, 'header');
    } else {
      const values = new Float32Array(data.buffer.slice(data.byteOffset, data.byteOffset + (data.byteLength & ~3)));
      if (values.length > 0) {
        const index = random.int(values.length);
        values[index] = random.pick([Number.NaN, Infinity, -Infinity, 3.4e38, -0, 1e-45]);
        log.push(`weight ${index} = ${values[index]}`);
        data = new Uint8Array(values.buffer);
      }
    }
    const headerBytes = Buffer.from(header, 'utf8');
    const length = Buffer.alloc(8);
    const declared = random.chance(0.9) ? BigInt(headerBytes.length) : BigInt(random.pick([0, headerBytes.length + 1, headerBytes.length - 1, 2 ** 31, 2 ** 53, 1e8]));
    if (declared !== BigInt(headerBytes.length)) log.push(`declared header length ${declared}`);
    length.writeBigUInt64LE(declared < 0n ? 0n : declared);
    bytes = new Uint8Array(Buffer.concat([length, headerBytes, data]));
  }
  return bytes;
}

function checkModelResult(model: Model): void {
  expectValid(model.parameters.length === parameterCount(model.spec), `${model.parameters.length} parameters for ${parameterCount(model.spec)}`);
  expectValid(model.labels.length === classCount(model.spec), `${model.labels.length} labels for ${classCount(model.spec)} classes`);
  expectValid(model.parameters.every(Number.isFinite), 'a weight is not finite');
}

const modelTarget: FuzzTarget = {
  name: 'model',
  documentedError: 'ModelFileError',
  makeCase(random) {
    const log: Log = [];
    const bytes = mutateSafetensors(random, modelSeeds, log);
    return {
      description: log.join('; '),
      async run() {
        let model: Model;
        try {
          model = decodeModel(bytes, 'fuzz.safetensors', { preprocessingSchema });
        } catch (error) {
          return expectDocumented(error, ModelFileError, 'fuzz.safetensors');
        }
        checkModelResult(model);
        try {
          decodeModel(encodeModel(model), 'again.safetensors', { preprocessingSchema });
        } catch (error) {
          throw new FuzzFailure(`loads, but does not save and load again: ${describeError(error)}`);
        }
        return 'accepted';
      },
    };
  },
};

const checkpointTarget: FuzzTarget = {
  name: 'checkpoint',
  documentedError: 'ModelFileError',
  makeCase(random) {
    const log: Log = [];
    const bytes = mutateSafetensors(random, checkpointSeeds, log);
    return {
      description: log.join('; '),
      async run() {
        let checkpoint: ReturnType<typeof decodeCheckpoint>;
        try {
          checkpoint = decodeCheckpoint(bytes, 'fuzz.ckpt.safetensors', { preprocessingSchema });
        } catch (error) {
          return expectDocumented(error, ModelFileError, 'fuzz.ckpt.safetensors');
        }
        checkModelResult(checkpoint.model);
        expectValid(checkpoint.state.history.length === checkpoint.state.epoch, 'history and epoch disagree');
        try {
          decodeCheckpoint(encodeCheckpoint(checkpoint), 'again.ckpt', { preprocessingSchema });
        } catch (error) {
          throw new FuzzFailure(`loads, but does not save and load again: ${describeError(error)}`);
        }
        return 'accepted';
      },
    };
  },
};

// ---- the course tool's model.m ----

/** Tokens that stress the course format's integers and reals. */
const courseTokens = [
  '0', '-1', '1', '2', '1000', '1001', '16777216', '16777217', '2147483648', '4294967297', '1e309', '-1e309', '1e-400', 'nan', 'inf',
  '0x10', '.', '+', '3.', '.5', '1e', '1e+', '\u0661', '1,5', '\u0000', '9'.repeat(400), '16777215', '15', '300',
];

function mutateCourse(random: Random, text: string, log: Log): string {
  if (random.chance(0.4)) return mutateText(random, text, log);
  const tokens = text.split(/(\s+)/);
  const words = tokens.map((token, index) => (/\S/.test(token) ? index : -1)).filter((index) => index >= 0);
  if (words.length === 0) return text;
  const index = random.chance(0.5) ? words[random.int(Math.min(words.length, 6))] : random.pick(words); // the sizes come first
  switch (random.int(3)) {
    case 0: {
      const token = random.pick(courseTokens);
      log.push(`token ${index} = ${JSON.stringify(token.slice(0, 20))}`);
      tokens[index] = token;
      break;
    }
    case 1:
      log.push(`remove token ${index}`);
      tokens[index] = '';
      break;
    default: {
      const count = random.pick([1, 5, 100]);
      log.push(`insert ${count} tokens at ${index}`);
      tokens[index] = `${Array.from({ length: count }, () => random.pick(courseTokens)).join(' ')} ${tokens[index]}`;
    }
  }
  return tokens.join('');
}

const courseTarget: FuzzTarget = {
  name: 'course',
  documentedError: 'CourseModelError',
  makeCase(random) {
    const log: Log = [];
    const seedIndex = random.int(courseSeeds.length);
    log.push(`model.m seed ${seedIndex}`);
    let text = courseSeeds[seedIndex];
    const rounds = random.range(1, 3);
    for (let i = 0; i < rounds; i++) text = mutateCourse(random, text, log);
    let bytes = encodeText(random, text, log);
    if (random.chance(0.1)) bytes = mutateBytes(random, bytes, log);
    return {
      description: log.join('; '),
      async run() {
        let model: Model;
        try {
          const network = parseCourseModel(Buffer.from(bytes).toString('utf8'), 'model.m');
          model = courseNetworkToModel(network, 'model.m');
        } catch (error) {
          return expectDocumented(error, CourseModelError, 'model.m');
        }
        checkModelResult(model);
        try {
          encodeModel(model);
        } catch (error) {
          throw new FuzzFailure(`imports, but does not save: ${describeError(error)}`);
        }
        return 'accepted';
      },
    };
  },
};

// ---- run files ----

const runTarget: FuzzTarget = {
  name: 'run',
  documentedError: 'RunFileError',
  makeCase(random) {
    const log: Log = [];
    const seedIndex = random.int(runSeeds.length);
    const seed = runSeeds[seedIndex];
    log.push(`run seed ${seedIndex}`);
    let text = seed.text;
    const rounds = random.range(1, 3);
    for (let i = 0; i < rounds; i++) text = mutateJsonText(random, text, log, 'run');
    const bytes = random.chance(0.1) ? mutateBytes(random, Buffer.from(text), log) : Buffer.from(text);
    const file = `${seed.id}.json`;
    return {
      description: log.join('; '),
      async run() {
        let record: ReturnType<typeof decodeRun>;
        try {
          record = decodeRun(Buffer.from(bytes).toString('utf8'), file);
        } catch (error) {
          return expectDocumented(error, RunFileError, file);
        }
        try {
          summarizeRun(record); // the run list shows every file it reads
          encodeRun(record); // renaming a run writes it back
        } catch (error) {
          throw new FuzzFailure(`reads, but cannot be listed or saved again: ${describeError(error)}`);
        }
        return 'accepted';
      },
    };
  },
};

export const fuzzTargets: readonly FuzzTarget[] = [csvTarget, datasetTarget, idxTarget, modelTarget, checkpointTarget, courseTarget, runTarget];

export function fuzzTarget(name: string): FuzzTarget {
  const target = fuzzTargets.find((candidate) => candidate.name === name);
  if (target === undefined) throw new Error(`no fuzz target "${name}" (targets: ${fuzzTargets.map((t) => t.name).join(', ')})`);
  return target;
}
