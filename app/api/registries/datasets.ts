// The session's open datasets by id: datasets:open (a path, an upload or MNIST), :list, :preview, :close and
// :split. An upload lives in the session folder until its dataset is closed and no run reads it any more.
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { renameClasses } from '../../core/data/classNames';
import type { Dataset } from '../../core/data/dataset';
import { services } from '../../services';
import { idxTestSource, knownData, loadDataSourceFor, pinnedSource, type DataSource } from '../../services/dataSources';
import { showUploadNames } from '../errors';
import type { ParsedPayloadOf } from '../schemas';
import type { DatasetInfo, DatasetPreview, SplitPlan } from '../types';
import type { IdSequence } from './ids';
import { removeFiles, type SessionFolder } from './sessionFolder';

export interface DatasetRecord {
  info: DatasetInfo;
  source: DataSource;
  dataset: Dataset;
  /** Uploaded files (a CSV, or IDX images and labels, and a test pair), deleted when the dataset is closed. */
  uploadedFiles: string[];
}

/** The source kinds whose classes the user may name (their files only number them). */
function namesClasses(source: DataSource): source is DataSource & { kind: 'idx' | 'mnist' | 'folder' } {
  return source.kind === 'idx' || source.kind === 'mnist' || source.kind === 'folder';
}

type SourcePayload = ParsedPayloadOf<'datasets:open'>['source'];
interface Upload {
  file: string;
  /** The name as sent, for messages. */
  name: string;
}

/** The files a source reads, and the source without them (what else must match). */
function filesOf(source: DataSource): { files: string[]; rest: unknown } {
  if (source.kind === 'csv') return { files: [source.path], rest: { ...source, path: '' } };
  if (source.kind === 'idx') return { files: [source.imagesPath, source.labelsPath ?? ''], rest: { ...source, imagesPath: '', labelsPath: '' } };
  return { files: [], rest: source };
}

/** Whether two sources read the same data: equal but for their paths, and files of equal contents. */
async function sameData(a: DataSource, b: DataSource): Promise<boolean> {
  const [left, right] = [filesOf(a), filesOf(b)];
  if (JSON.stringify(left.rest) !== JSON.stringify(right.rest)) return false;
  for (const [index, file] of left.files.entries()) {
    const other = right.files[index];
    if (file === other) continue;
    if (!file || !other) return false;
    const [sizeA, sizeB] = await Promise.all([fsp.stat(file).then((st) => st.size, () => -1), fsp.stat(other).then((st) => st.size, () => -2)]);
    if (sizeA !== sizeB) return false;
    const [x, y] = await Promise.all([fsp.readFile(file).catch(() => undefined), fsp.readFile(other).catch(() => undefined)]);
    if (!x || !y || !x.equals(y)) return false;
  }
  return true;
}

export class DatasetRegistry {
  private readonly records = new Map<string, DatasetRecord>();
  /** Uploads of closed datasets that a run was still reading: removed with the session's files. */
  private readonly keptFiles: string[] = [];

  constructor(
    private readonly ids: IdSequence,
    private readonly folder: SessionFolder,
    /** Whether a run that has not finished reads this dataset. */
    private readonly readByRun: (datasetId: string) => boolean,
  ) {}

  get(id: string): DatasetRecord {
    const record = this.records.get(id);
    if (!record) throw new Error(`no dataset with id "${id}" (open one with datasets:open)`);
    return record;
  }

  list(): DatasetInfo[] {
    return [...this.records.values()].map((record) => record.info);
  }

  async open(source: SourcePayload): Promise<DatasetInfo> {
    const uploads: Upload[] = [];
    try {
      const { dataSource, name } = await this.resolve(source, uploads);
      // an upload is named as the user chose it, never by where the session keeps it
      const description = source.kind === 'upload' || source.kind === 'folder' ? `${name} (uploaded)` : services.datasets.describe(dataSource);
      return await this.load(dataSource, name, description, uploads);
    } catch (error) {
      await removeFiles(uploads.map((upload) => upload.file));
      showUploadNames(error, uploads);
      throw error;
    }
  }

  /**
   * A dataset a project names by its source (its files where the project keeps them). One already open is
   * reused: the same source, or the same name, options and file contents (a copy kept by another project or
   * by the last session), so opening a project twice opens nothing twice.
   */
  async reopen(source: DataSource, name: string): Promise<DatasetInfo> {
    for (const record of this.records.values()) {
      if (record.info.name === name && (await sameData(record.source, source))) return record.info;
    }
    return this.load(source, name, services.datasets.describe(source), []);
  }

  /** Reads the source (and an IDX pair's test pair) and keeps it under a new id; `uploads` are its files, if uploaded. */
  /**
   * A CSV table read again from its file with another task or dates choice; the new dataset replaces the old
   * one and takes over its uploaded files (a run still reading the old one keeps reading the same files).
   */
  async reopenWith(datasetId: string, change: { task?: 'classification' | 'regression'; dates?: 'parts' | 'ignore' }): Promise<DatasetInfo> {
    const record = this.get(datasetId);
    if (record.source.kind !== 'csv' || !record.info.csv) throw Object.assign(new Error(`${record.info.name} is not a CSV table: only a table's task and dates can change`), { field: 'datasetId' });
    const source: DataSource = { ...record.source, options: { ...record.source.options, ...change } };
    const uploads = record.uploadedFiles.map((file) => ({ file, name: record.info.name }));
    const info = await this.load(source, record.info.name, record.info.description, uploads);
    this.records.delete(datasetId);
    return info;
  }

  private async load(dataSource: DataSource, name: string, description: string, uploads: readonly Upload[]): Promise<DatasetInfo> {
    // The Data screen shows the column report; runs read the file again without it.
    const withReport = dataSource.kind === 'csv' ? { ...dataSource, options: { ...dataSource.options, report: true } } : dataSource;
    const dataset = await services.datasets.load(withReport);
    const testPair = await this.readTestPair(dataSource, dataset, uploads);
    const id = this.ids.next('dataset');
    // a folder keeps the size, channels and fit chosen now, so runs read it the same way
    const source = pinnedSource(dataSource, dataset);
    const info: DatasetInfo = {
      id, name, description, ...services.datasets.summarize(dataset),
      ...(testPair ? { testPair } : {}),
      ...(namesClasses(dataSource) ? { namesClasses: true as const } : {}),
      ...(dataSource.kind === 'csv' && dataset.featureShape.length === 1 ? { csv: { dates: dataSource.options?.dates ?? 'ignore' } } : {}),
    };
    this.records.set(id, { info, source, dataset, uploadedFiles: uploads.map((upload) => upload.file) });
    return info;
  }

  /** Every open dataset with its source, for a project. */
  entries(): DatasetRecord[] {
    return [...this.records.values()];
  }

  /** The payload's source as the services' DataSource and its display name; uploads are written first. */
  private async resolve(source: SourcePayload, uploads: Upload[]): Promise<{ dataSource: DataSource; name: string }> {
    if (source.kind === 'mnist') {
      const split = source.split ?? 'train';
      return { dataSource: { kind: 'mnist', split, limit: source.limit }, name: `MNIST (${split})` };
    }
    if (source.kind === 'path') {
      const file = path.resolve(source.path);
      const labelsPath = source.labelsPath && path.resolve(source.labelsPath);
      const dataSource = await services.datasets.fromArgument(file, 'train', { labelsPath, csv: source.csv, image: source.image });
      if (source.image && dataSource.kind !== 'folder') throw new Error(`${path.basename(file)} is not a folder, so image options do not apply`);
      return { dataSource, name: path.basename(file) };
    }
    if (source.kind === 'folder') {
      const root = await this.folder.writeUploadFolder(source.name, source.files);
      uploads.push({ file: root, name: source.name });
      return { dataSource: { kind: 'folder', path: root, ...source.image }, name: source.name };
    }
    const name = source.fileName;
    const write = async (file: { fileName: string; base64: string }): Promise<string> => {
      const written = await this.folder.writeUpload(file.fileName, file.base64);
      uploads.push({ file: written, name: file.fileName });
      return written;
    };
    const images = await write(source);
    const labelsPath = source.labels && (await write(source.labels));
    const test = source.test && { imagesPath: await write(source.test.images), labelsPath: await write(source.test.labels) };
    const dataSource = await services.datasets.fromArgument(images, 'train', { labelsPath, csv: source.csv });
    if (source.labels && dataSource.kind !== 'idx') {
      throw new Error(`${name} is not an IDX images file, so it takes no labels file (a CSV holds its labels in a column)`);
    }
    return { dataSource: withTestPair(dataSource, test, name), name };
  }

  /** An IDX pair's test pair, read now so that a bad one is reported at once: its name and count. */
  private async readTestPair(source: DataSource, dataset: Dataset, uploads: readonly Upload[]): Promise<DatasetInfo['testPair']> {
    const testSource = idxTestSource(source);
    if (!testSource || testSource.kind !== 'idx') return undefined;
    const test = await loadDataSourceFor(testSource, knownData(dataset));
    const uploaded = uploads.find((upload) => upload.file === testSource.imagesPath);
    return { name: uploaded?.name ?? path.basename(testSource.imagesPath), count: test.count };
  }

  /** datasets:setClassNames: the names runs started from now on use (and the preview shows). */
  setClassNames({ datasetId, classNames }: ParsedPayloadOf<'datasets:setClassNames'>): DatasetInfo {
    const record = this.get(datasetId);
    const source = record.source;
    if (!namesClasses(source)) {
      throw new Error(`${record.info.name}: a CSV's classes are the values of its label column; rename them in the file`);
    }
    const dataset = renameClasses(record.dataset, classNames, record.info.name);
    const named: DataSource = dataset.labelValues ? { ...source, classNames: dataset.classLabels } : withoutClassNames(source);
    const info: DatasetInfo = { ...record.info, classLabels: [...dataset.classLabels] };
    this.records.set(datasetId, { ...record, source: named, dataset, info });
    return info;
  }

  preview({ datasetId, rows, perClass }: ParsedPayloadOf<'datasets:preview'>): Promise<DatasetPreview> {
    const record = this.get(datasetId);
    return services.datasets.preview(record.source, record.dataset, rows ?? 20, perClass);
  }

  async close(datasetId: string): Promise<{ closed: true }> {
    const record = this.get(datasetId);
    this.records.delete(datasetId);
    // A run still reading the file keeps it; the session's close removes it later.
    if (this.readByRun(datasetId)) this.keptFiles.push(...record.uploadedFiles);
    else await removeFiles(record.uploadedFiles);
    return { closed: true };
  }

  split({ datasetId, testDatasetId, valSplit, testSplit }: ParsedPayloadOf<'datasets:split'>): SplitPlan {
    const data = this.get(datasetId);
    const test = testDatasetId !== undefined ? this.get(testDatasetId) : undefined;
    const ownTest = idxTestSource(data.source);
    const ownCount = data.info.testPair?.count;
    const plan = services.training.planSplit(data.dataset, data.source, {
      valSplit,
      testSplit,
      test: test ? { source: test.source, count: test.dataset.count } : ownTest && ownCount !== undefined ? { source: ownTest, count: ownCount } : undefined,
    });
    // The test set as the user knows it (an upload's name, not its temporary path).
    const shownTest = test?.info.name ?? data.info.testPair?.name;
    return plan.separateTest !== undefined && shownTest !== undefined ? { ...plan, separateTest: shownTest } : plan;
  }

  /** Every upload the session still holds, for its close. */
  files(): string[] {
    return [...this.keptFiles, ...[...this.records.values()].flatMap((record) => record.uploadedFiles)];
  }

  clear(): void {
    this.records.clear();
    this.keptFiles.length = 0;
  }
}

/** An IDX source with its test pair; anything else given a test pair is refused (a CSV's test data is a dataset of its own). */
function withTestPair(source: DataSource, test: { imagesPath: string; labelsPath?: string } | undefined, name: string): DataSource {
  if (!test) return source;
  if (source.kind !== 'idx') throw new Error(`${name} is not an IDX images file, so it takes no IDX test pair`);
  return { ...source, test };
}

function withoutClassNames(source: DataSource & { kind: 'idx' | 'mnist' | 'folder' }): DataSource {
  const { classNames: _names, ...rest } = source;
  return rest;
}
