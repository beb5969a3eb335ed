// Model files (DESIGN §3, docs/FILE_FORMAT.md): a safetensors file whose header's __metadata__ holds one
// key, "nnstudio", a JSON string with the spec, labels, preprocessing and training record; the tensors
// are layers.<i>.weight / layers.<i>.bias in parameterTable order, F32 little-endian.
// Decoding validates everything and reports the first problem, naming the file.
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { describeFsError, FileWriteError, writeFileAtomic } from '../files/atomic';
import { issueText, oneLine, parseErrorText, valueText } from '../files/messages';
import { parseModelSpec } from './spec';
import type { ModelSpec } from './spec';
import { classCount, elementCount, parameterTable } from './shapes';
import type { ParamTensor } from './shapes';
import type { TrainingRecord } from './trainingTypes';

export const modelFormatVersion = 1;
/** The safetensors library's own limit on the header. */
export const maxHeaderBytes = 100_000_000;

// ---- types ----

export type { EpochRecord, TrainingRecord } from './trainingTypes';

export interface Model<Preprocessing = unknown> {
  spec: ModelSpec;
  /** Flat, in parameterTable(spec) order. */
  parameters: Float32Array;
  /** Class names, index = class id; as many as classCount(spec); none for a regression model. */
  labels: string[];
  /** Names of the data's input columns (may be empty, e.g. for IDX images). */
  featureNames: string[];
  /** Shape of one preprocessed sample; as many elements as spec.input. */
  inputShape: number[];
  /** Opaque here; app/core/data/preprocess.ts defines it and validates it through DecodeOptions. */
  preprocessing: Preprocessing;
  training?: TrainingRecord;
  /** Evaluation results, e.g. { test: ClassificationReport, loss }. */
  metrics?: Record<string, unknown>;
}

export interface DecodeOptions<Preprocessing> {
  /** Validates `preprocessing`; without it any JSON value is accepted. */
  preprocessingSchema?: z.ZodType<Preprocessing>;
}

/** A tensor stored after the model's own (a checkpoint's optimizer state), F32. */
export interface ExtraTensor {
  name: string;
  shape: number[];
  data: Float32Array;
}

/** What a file must hold beyond the model: tensors by name and shape, and __metadata__ keys. */
export interface ExtraLayout {
  tensors: { name: string; shape: number[] }[];
}

export interface DecodedFile<Preprocessing> {
  model: Model<Preprocessing>;
  /** The extra tensors asked for, by name. */
  tensors: Map<string, Float32Array>;
  /** The whole __metadata__ (string values), "nnstudio" included. */
  metadata: Record<string, string>;
}

/** A model file that cannot be read or written; the message starts with the file's name. */
export class ModelFileError extends Error {
  readonly file: string;
  constructor(file: string, message: string) {
    super(message);
    this.name = 'ModelFileError';
    this.file = file;
  }
}

/** One epoch of a training history, as model files and run files keep it. */
export const epochRecordSchema = z.looseObject({
  epoch: z.number().int().positive(),
  trainLoss: z.number().nullable(),
  trainAccuracy: z.number().nullable(),
  validationLoss: z.number().nullable().optional(),
  validationAccuracy: z.number().nullable().optional(),
  seconds: z.number().nonnegative(),
});

const trainingRecordSchema = z.strictObject({
  options: z.record(z.string(), z.unknown()),
  history: z.array(epochRecordSchema),
  device: z.string(),
  seconds: z.number().nonnegative(),
});

// Every field of the "nnstudio" metadata but formatVersion, spec and preprocessing, which are checked
// on their own so that their messages come first and say more.
const metadataSchema = z.looseObject({
  inputShape: z.array(z.number().int().positive()).min(1),
  labels: z.array(z.string()),
  featureNames: z.array(z.string()),
  training: trainingRecordSchema.optional(),
  metrics: z.record(z.string(), z.unknown()).optional(),
});

const littleEndianHost = os.endianness() === 'LE';

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function has(object: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(object, key);
}


function shapeText(shape: readonly unknown[]): string {
  return `[${shape.join(',')}]`;
}

/** Class names a model of this spec has: one per class, none for regression (its targets are named in preprocessing.target). */
function labelCount(spec: ModelSpec): number {
  return spec.task === 'regression' ? 0 : classCount(spec);
}

// ---- encoding ----

// The checks decodeModel would make, before anything is written: a saved file always loads.
function checkModel(model: Model, table: ParamTensor[]): void {
  const expected = table.reduce((sum, tensor) => sum + tensor.size, 0);
  if (model.parameters.length !== expected) {
    throw new Error(`the model has ${model.parameters.length} parameters, its spec needs ${expected}`);
  }
  const classes = labelCount(model.spec);
  if (model.labels.length !== classes) {
    throw new Error(`the model has ${model.labels.length} class labels, its spec predicts ${classes} classes`);
  }
  if (elementCount(model.inputShape) !== elementCount(model.spec.input)) {
    throw new Error(`input shape ${shapeText(model.inputShape)} does not match the spec's input ${shapeText(model.spec.input)}`);
  }
  for (const tensor of table) {
    for (let i = 0; i < tensor.size; i++) {
      const value = model.parameters[tensor.offset + i];
      if (!Number.isFinite(value)) throw new Error(`tensor ${tensor.name} holds ${value} at element ${i}`);
    }
  }
}

/**
 * The model as safetensors bytes. Throws (naming the problem) for a model that would not load back.
 * `extra` tensors follow the model's in the data section; `extraMetadata` joins "nnstudio" in __metadata__.
 */
export function encodeModel(model: Model, extra: ExtraTensor[] = [], extraMetadata: Record<string, string> = {}): Buffer {
  const spec = parseModelSpec(model.spec);
  const table = parameterTable(spec);
  checkModel(model, table);

  const metadata: Record<string, unknown> = {
    formatVersion: modelFormatVersion,
    spec,
    inputShape: model.inputShape,
    labels: model.labels,
    featureNames: model.featureNames,
    preprocessing: model.preprocessing ?? null,
  };
  if (model.training !== undefined) metadata.training = model.training;
  if (model.metrics !== undefined) metadata.metrics = model.metrics;

  const header: Record<string, unknown> = { __metadata__: { ...extraMetadata, nnstudio: JSON.stringify(metadata) } };
  for (const tensor of table) {
    header[tensor.name] = { dtype: 'F32', shape: tensor.shape, data_offsets: [tensor.offset * 4, (tensor.offset + tensor.size) * 4] };
  }
  const blocks: Float32Array[] = [model.parameters];
  let offset = model.parameters.length * 4;
  for (const tensor of extra) {
    if (has(header, tensor.name)) throw new Error(`tensor ${tensor.name} is written twice`);
    if (tensor.data.length !== elementCount(tensor.shape)) {
      throw new Error(`tensor ${tensor.name} has ${tensor.data.length} values for shape ${shapeText(tensor.shape)}`);
    }
    header[tensor.name] = { dtype: 'F32', shape: tensor.shape, data_offsets: [offset, offset + tensor.data.length * 4] };
    offset += tensor.data.length * 4;
    blocks.push(tensor.data);
  }
  const headerBytes = Buffer.from(JSON.stringify(header), 'utf8');
  // Pad with spaces so the tensors start on an 8-byte boundary (8 + headerLength is a multiple of 8).
  const headerLength = headerBytes.length + ((8 - (headerBytes.length % 8)) % 8);

  const file = Buffer.alloc(8 + headerLength + offset, 0x20);
  file.writeBigUInt64LE(BigInt(headerLength), 0);
  headerBytes.copy(file, 8);
  let at = 8 + headerLength;
  for (const block of blocks) {
    if (littleEndianHost) {
      file.set(new Uint8Array(block.buffer, block.byteOffset, block.length * 4), at);
    } else {
      for (let i = 0; i < block.length; i++) file.writeFloatLE(block[i], at + 4 * i);
    }
    at += block.length * 4;
  }
  return file;
}

// ---- decoding ----

/**
 * Reads model bytes, validating everything: header length, UTF-8, JSON, metadata, format version, spec,
 * every tensor's presence, dtype, shape and offsets, no extra tensors, the data section's exact length
 * and every weight finite. The first problem throws ModelFileError "<fileName>: <problem>".
 */
export function decodeModel<Preprocessing = unknown>(
  bytes: Uint8Array,
  fileName: string,
  options: DecodeOptions<Preprocessing> = {},
): Model<Preprocessing> {
  return decodeModelFile(bytes, fileName, options, { tensors: [] }).model;
}

/**
 * decodeModel for a file that holds `extra` tensors too (each checked like the model's, all finite).
 * `allowUnknownTensors` reads the model and metadata of a file whose other tensors are not yet known
 * (a checkpoint's metadata says which it holds).
 */
export function decodeModelFile<Preprocessing = unknown>(
  bytes: Uint8Array,
  fileName: string,
  options: DecodeOptions<Preprocessing>,
  extra: ExtraLayout,
  { allowUnknownTensors = false }: { allowUnknownTensors?: boolean } = {},
): DecodedFile<Preprocessing> {
  const fail: Fail = (problem) => {
    throw new ModelFileError(fileName, `${fileName}: ${problem}`);
  };
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const { header, headerLength } = readHeader(buffer, fail);
  const { fileMetadata, metadata } = readMetadata(header, fail);
  const { spec, table, fields, preprocessing } = readModelFields(metadata, options, fail);

  const dataStart = 8 + headerLength;
  const extraTable = extra.tensors.map((tensor) => ({ name: tensor.name, shape: tensor.shape, size: elementCount(tensor.shape) }));
  const ranges = locateTensors(header, table, extraTable, buffer.length - dataStart, allowUnknownTensors, fail);
  const data = buffer.subarray(dataStart);
  const parameters = readParameters(data, table, ranges, fail);
  const tensors = new Map<string, Float32Array>();
  for (const tensor of extraTable) tensors.set(tensor.name, readFloats(data, tensor, ranges.get(tensor.name)!, fail));

  const { inputShape, labels, featureNames, training, metrics } = fields;
  const model: Model<Preprocessing> = { spec, parameters, labels, featureNames, inputShape, preprocessing };
  if (training !== undefined) model.training = training as TrainingRecord;
  if (metrics !== undefined) model.metrics = metrics;
  return { model, tensors, metadata: fileMetadata };
}

/** Throws the file's ModelFileError, "<fileName>: <problem>". */
type Fail = (problem: string) => never;

/** The safetensors header: its 8-byte length, then that much UTF-8 JSON holding an object. */
function readHeader(buffer: Buffer, fail: Fail): { header: Record<string, unknown>; headerLength: number } {
  if (buffer.length < 8) {
    fail(`not a model file: ${buffer.length} bytes, too short for a safetensors header length (8 bytes)`);
  }
  const declaredLength = buffer.readBigUInt64LE(0);
  if (declaredLength > BigInt(maxHeaderBytes)) {
    fail(`header length ${declaredLength} is over the 100 MB limit: not a safetensors file, or a damaged one`);
  }
  const headerLength = Number(declaredLength);
  if (8 + headerLength > buffer.length) {
    fail(`header length ${headerLength} runs past the end of the file (${buffer.length} bytes): truncated, or not a safetensors file`);
  }
  let headerText = '';
  try {
    headerText = new TextDecoder('utf-8', { fatal: true }).decode(buffer.subarray(8, 8 + headerLength));
  } catch {
    fail('header is not valid UTF-8: not a safetensors file, or a damaged one');
  }
  let header: unknown;
  try {
    header = JSON.parse(headerText);
  } catch (error) {
    fail(`header is not valid JSON (${parseErrorText(error)}): not a safetensors file, or a damaged one`);
  }
  if (!isPlainObject(header)) return fail('header is not a JSON object: not a safetensors file');
  return { header, headerLength };
}

/** __metadata__ (strings only) and its "nnstudio" entry, a JSON object of our format version. */
function readMetadata(header: Record<string, unknown>, fail: Fail): { fileMetadata: Record<string, string>; metadata: Record<string, unknown> } {
  if (!has(header, '__metadata__')) fail('header has no __metadata__: a safetensors file, but not an NN Studio model');
  const fileMetadata = header.__metadata__;
  if (!isPlainObject(fileMetadata) || Object.values(fileMetadata).some((value) => typeof value !== 'string')) {
    fail('__metadata__ must map strings to strings');
  }
  const metadataText = (fileMetadata as Record<string, string>).nnstudio;
  if (metadataText === undefined || !has(fileMetadata as object, 'nnstudio')) {
    fail('__metadata__ has no "nnstudio" entry: a safetensors file, but not an NN Studio model');
  }
  let metadata: unknown;
  try {
    metadata = JSON.parse(metadataText);
  } catch (error) {
    fail(`metadata "nnstudio" is not valid JSON (${parseErrorText(error)})`);
  }
  if (!isPlainObject(metadata)) return fail('metadata "nnstudio" is not a JSON object');

  const version = metadata.formatVersion;
  if (version === undefined) fail('metadata has no formatVersion');
  if (version !== modelFormatVersion) {
    const newer = typeof version === 'number' && version > modelFormatVersion ? ' (written by a newer NN Studio)' : '';
    fail(`format version ${valueText(version)} is not supported: this NN Studio reads version ${modelFormatVersion}${newer}`);
  }
  return { fileMetadata: fileMetadata as Record<string, string>, metadata };
}

/** The spec, its parameter table, the metadata's fields checked against it, and the preprocessing. */
function readModelFields<Preprocessing>(metadata: Record<string, unknown>, options: DecodeOptions<Preprocessing>, fail: Fail) {
  let spec: ModelSpec = undefined as unknown as ModelSpec;
  let table: ParamTensor[] = [];
  let classes = 0;
  try {
    spec = parseModelSpec(metadata.spec);
    table = parameterTable(spec);
    classes = labelCount(spec);
  } catch (error) {
    const message = (error as Error).message;
    fail(message.startsWith('invalid model spec') ? message : `invalid model spec: ${message}`);
  }

  const fields = metadataSchema.safeParse(metadata);
  if (!fields.success) return fail(`metadata ${issueText(fields.error, 'nnstudio')}`);
  const { inputShape, labels } = fields.data;
  if (elementCount(inputShape) !== elementCount(spec.input)) {
    fail(`metadata inputShape ${shapeText(inputShape)} does not match the spec's input ${shapeText(spec.input)}`);
  }
  if (labels.length !== classes) fail(`metadata has ${labels.length} class labels, the spec predicts ${classes} classes`);
  if (!has(metadata, 'preprocessing')) fail('metadata has no preprocessing entry');
  let preprocessing = metadata.preprocessing as Preprocessing;
  if (options.preprocessingSchema) {
    const parsed = options.preprocessingSchema.safeParse(metadata.preprocessing);
    if (!parsed.success) fail(`metadata ${issueText(parsed.error, 'preprocessing')}`);
    else preprocessing = parsed.data;
  }
  return { spec, table, fields: fields.data, preprocessing };
}

interface TensorLayout {
  name: string;
  shape: readonly number[];
  size: number;
}

/** One tensor's header entry: F32, the shape the spec needs, offsets spanning exactly its bytes inside the data. */
function tensorRange(header: Record<string, unknown>, tensor: TensorLayout, dataLength: number, fail: Fail): { begin: number; end: number } {
  const name = tensor.name;
  if (!has(header, name)) fail(`tensor ${name} is missing`);
  const entry = header[name];
  if (!isPlainObject(entry)) return fail(`tensor ${name}: its header entry is not an object`);
  if (entry.dtype !== 'F32') fail(`tensor ${name} has dtype ${valueText(entry.dtype)}, NN Studio models hold F32`);
  const shape = entry.shape;
  if (!Array.isArray(shape) || shape.some((dim) => !Number.isSafeInteger(dim) || dim < 0)) {
    fail(`tensor ${name} has a malformed shape ${valueText(shape)}`);
  }
  if (shapeText(shape as number[]) !== shapeText(tensor.shape)) {
    fail(`tensor ${name} has shape ${oneLine(shapeText(shape as number[]), 60)}, the spec needs ${shapeText(tensor.shape)}`);
  }
  const offsets = entry.data_offsets;
  if (
    !Array.isArray(offsets) ||
    offsets.length !== 2 ||
    offsets.some((offset) => !Number.isSafeInteger(offset) || offset < 0) ||
    offsets[0] > offsets[1]
  ) {
    return fail(`tensor ${name} has malformed data_offsets ${valueText(offsets)}`);
  }
  const [begin, end] = offsets as [number, number];
  if (end - begin !== tensor.size * 4) {
    fail(`tensor ${name}: data_offsets [${begin},${end}] span ${end - begin} bytes, its shape needs ${tensor.size * 4}`);
  }
  if (end > dataLength) {
    fail(`tensor ${name}: data_offsets [${begin},${end}] lie outside the data section (${dataLength} bytes): file truncated?`);
  }
  return { begin, end };
}

/** Every tensor's range in the data section: each one checked, none unexpected or overlapping, the data's length exact. */
function locateTensors(
  header: Record<string, unknown>,
  table: readonly TensorLayout[],
  extraTable: readonly TensorLayout[],
  dataLength: number,
  allowUnknownTensors: boolean,
  fail: Fail,
): Map<string, { begin: number; end: number }> {
  const ranges = new Map<string, { begin: number; end: number }>();
  for (const tensor of [...table, ...extraTable]) ranges.set(tensor.name, tensorRange(header, tensor, dataLength, fail));
  for (const key of Object.keys(header)) {
    if (key !== '__metadata__' && !ranges.has(key) && !allowUnknownTensors) fail(`unexpected tensor ${key}: the spec has no such parameter`);
  }
  const sorted = [...ranges].map(([name, range]) => ({ name, ...range })).sort((a, b) => a.begin - b.begin);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i].begin < sorted[i - 1].end) fail(`tensors ${sorted[i - 1].name} and ${sorted[i].name} overlap`);
  }
  const needed = [...table, ...extraTable].reduce((sum, tensor) => sum + tensor.size, 0) * 4;
  if (allowUnknownTensors ? dataLength < needed : dataLength !== needed) {
    const why = dataLength > needed ? 'extra bytes after the tensors' : 'file truncated?';
    fail(`data section has ${dataLength} bytes, the tensors need ${needed} (${why})`);
  }
  return ranges;
}

/** The model's parameters in parameterTable order, every value finite. */
function readParameters(data: Buffer, table: readonly ParamTensor[], ranges: Map<string, { begin: number; end: number }>, fail: Fail): Float32Array {
  const parameters = new Float32Array(table.reduce((sum, tensor) => sum + tensor.size, 0));
  for (const tensor of table) {
    const range = ranges.get(tensor.name)!;
    const source = data.subarray(range.begin, range.end);
    if (littleEndianHost) {
      new Uint8Array(parameters.buffer, tensor.offset * 4, tensor.size * 4).set(source);
    } else {
      for (let i = 0; i < tensor.size; i++) parameters[tensor.offset + i] = source.readFloatLE(4 * i);
    }
    for (let i = 0; i < tensor.size; i++) {
      const value = parameters[tensor.offset + i];
      if (!Number.isFinite(value)) fail(`tensor ${tensor.name} holds ${value} at element ${i}`);
    }
  }
  return parameters;
}

/** An extra tensor's values, every one finite. */
function readFloats(data: Buffer, tensor: TensorLayout, range: { begin: number; end: number }, fail: Fail): Float32Array {
  const source = data.subarray(range.begin, range.end);
  const values = new Float32Array(tensor.size);
  for (let i = 0; i < tensor.size; i++) {
    values[i] = source.readFloatLE(4 * i);
    if (!Number.isFinite(values[i])) fail(`tensor ${tensor.name} holds ${values[i]} at element ${i}`);
  }
  return values;
}

// ---- files ----


/**
 * Encodes and writes atomically: a temporary file beside the target (path + ".tmp-<pid>-<random>"), fsync,
 * then rename over the target. On any failure the temporary file is removed, the previous file is left
 * untouched and the error (a ModelFileError) names the path. `what` names the file in messages.
 */
export async function writeEncodedFile(filePath: string, what: string, encode: () => Buffer): Promise<void> {
  let bytes: Buffer;
  try {
    bytes = encode();
  } catch (error) {
    throw new ModelFileError(filePath, `cannot save ${what} to ${filePath}: ${(error as Error).message}`);
  }
  try {
    await writeFileAtomic(filePath, bytes);
  } catch (error) {
    const reason = error instanceof FileWriteError ? error.reason : (error as Error).message;
    throw new ModelFileError(filePath, `cannot save ${what} to ${filePath}: ${reason}`);
  }
}

/** A model or checkpoint file's bytes; a read failure is a ModelFileError naming the path. */
export async function readModelFileBytes(filePath: string): Promise<Buffer> {
  try {
    return await fsp.readFile(filePath);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file' : describeFsError(error, filePath);
    throw new ModelFileError(filePath, `${filePath}: cannot read: ${reason}`);
  }
}

/** Writes the model atomically (writeEncodedFile). */
export async function saveModel(filePath: string, model: Model): Promise<void> {
  await writeEncodedFile(filePath, 'model', () => encodeModel(model));
}

/** Reads and validates a model file; errors are ModelFileError naming `filePath`. */
export async function loadModel<Preprocessing = unknown>(
  filePath: string,
  options: DecodeOptions<Preprocessing> = {},
): Promise<Model<Preprocessing>> {
  return decodeModel(await readModelFileBytes(filePath), filePath, options);
}
