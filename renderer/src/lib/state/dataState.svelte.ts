// The Data screen: the open datasets and the selected one with its preview, the three ways to open data
// (MNIST, a CSV with its column roles, an IDX pair), how the data is split (SplitState) and how its missing
// cells are filled (ImputationState).
import type { ApiError, DatasetInfo, DatasetPreview, PayloadOf } from '../../../../app/api/types';
import { api } from '../api';
import { fileToBase64 } from '../files';
import type { Task } from '../datasetFacts';
import { browserFile, fileSource, pickFile } from '../platform';
import { CsvSetup } from './csvSetup.svelte';
import { workbookProblem } from '../../../../app/core/data/textEncoding';
import type { PickedFolder } from '../folderFiles';
import { ImputationState } from './imputationState.svelte';
import { SplitState } from './splitState.svelte';

type DatasetSource = PayloadOf<'datasets:open'>['source'];
type ImageReading = NonNullable<Extract<DatasetSource, { kind: 'folder' }>['image']>;

/** The MNIST opener's choices, kept while the user moves between screens. */
export interface MnistDraft {
  split: 'train' | 'test';
  /** Empty: all. */
  limit: number | null;
}

export interface DataDeps {
  /** A dataset was selected (changed: a different one than before); the model follows it. */
  selected(changed: boolean): Promise<void>;
  /** The selected dataset was closed: nothing is selected for now. */
  deselected(): void;
}

export class DataState {
  datasets = $state.raw<DatasetInfo[]>([]);
  datasetId = $state<string | undefined>();
  dataset = $derived(this.datasets.find((entry) => entry.id === this.datasetId));
  preview = $state.raw<DatasetPreview | undefined>();
  opening = $state(false);

  readonly mnist = $state<MnistDraft>({ split: 'train', limit: 5000 });
  mnistError = $state<ApiError | undefined>();
  /** A CSV chosen but not opened yet: its columns and their roles. */
  pendingCsv = $state<CsvSetup | undefined>();
  csvError = $state<ApiError | undefined>();
  idxError = $state<ApiError | undefined>();
  folderError = $state<ApiError | undefined>();

  /** Reopening a CSV with another task or dates choice: under way for this dataset id, and the last failure. */
  retasking = $state<string | undefined>();
  taskError = $state<ApiError | undefined>();

  readonly split = new SplitState();
  readonly imputation = new ImputationState();
  private readonly deps: DataDeps;

  constructor(deps: DataDeps) {
    this.deps = deps;
  }

  /** The session's datasets as listed (on connecting, and when a tab opened, closed or renamed one). */
  listed(datasets: DatasetInfo[]): void {
    this.datasets = datasets;
    // closed in another tab: nothing is selected here any more
    if (this.datasetId !== undefined && !datasets.some((entry) => entry.id === this.datasetId)) {
      this.datasetId = undefined;
      this.preview = undefined;
      this.deps.deselected();
    }
  }

  // ---- opening ----

  async openMnist(): Promise<void> {
    this.mnistError = undefined;
    const { split, limit } = this.mnist;
    this.mnistError = await this.open({ kind: 'mnist', split, ...(limit ? { limit } : {}) });
  }

  /** A dropped or picked File; without one (Electron), the native open dialog. */
  async chooseCsv(file?: File): Promise<void> {
    this.csvError = undefined;
    const picked = file ? browserFile(file) : await pickFile('dataset');
    if (!picked) return;
    if ('error' in picked) {
      this.csvError = picked.error;
      return;
    }
    if (!/\.(csv|txt|tsv)(\.gz)?$/i.test(picked.name)) {
      this.pendingCsv = undefined;
      this.csvError = { message: workbookProblem(picked.name) ?? `${picked.name} is not a CSV file (.csv)` };
      return;
    }
    const setup = await CsvSetup.read(picked);
    this.pendingCsv = setup instanceof CsvSetup ? setup : undefined;
    if (!(setup instanceof CsvSetup)) this.csvError = { message: setup.problem };
  }

  /** The pending CSV's setup changed: the last error about it is stale. */
  csvEdited(): void {
    this.csvError = undefined;
  }

  cancelCsv(): void {
    this.pendingCsv = undefined;
    this.csvError = undefined;
  }

  async openCsv(): Promise<void> {
    const pending = this.pendingCsv;
    if (!pending || pending.problem) return;
    this.csvError = undefined;
    const options = pending.options();
    const error = await this.open({ ...(await fileSource(pending.file)), csv: options });
    this.csvError = error;
    if (!error) this.pendingCsv = undefined;
  }

  /** Whether the dataset is a CSV table (the server can read it again with the other task or dates choice). */
  canRetask(datasetId: string): boolean {
    return this.datasets.some((entry) => entry.id === datasetId && entry.csv !== undefined);
  }

  /** How the CSV's date columns were read: as numeric parts, or left out (the server's default). */
  datesOf(datasetId: string): 'parts' | 'ignore' {
    return this.datasets.find((entry) => entry.id === datasetId)?.csv?.dates ?? 'ignore';
  }

  /** Opens the CSV again as a classification or regression dataset, in place of the one open now. */
  setTask(datasetId: string, task: Task): Promise<void> {
    return this.reopen(datasetId, { task });
  }

  /** Opens the CSV again with its date columns as parts (year, month, day, weekday) or left out. */
  setDates(datasetId: string, dates: 'parts' | 'ignore'): Promise<void> {
    return this.reopen(datasetId, { dates });
  }

  /** The server reads the CSV again with changed options, replacing the open one; its missing-cell choices follow it. */
  private async reopen(datasetId: string, csv: { task?: Task; dates?: 'parts' | 'ignore' }): Promise<void> {
    if (this.retasking) return;
    this.taskError = undefined;
    this.retasking = datasetId;
    try {
      const reopened = await api.invoke('datasets:reopen', { datasetId, csv });
      if (reopened.error) {
        this.taskError = reopened.error;
        return;
      }
      this.imputation.carry(datasetId, reopened.result.id);
      this.imputation.forget(datasetId);
      this.datasets = [...this.datasets.filter((entry) => entry.id !== datasetId), reopened.result];
      await this.selectDataset(reopened.result.id);
    } finally {
      this.retasking = undefined;
    }
  }

  // ---- class names (IDX, MNIST) ----

  /** The last refusal of datasets:setClassNames, and the dataset it was about. */
  classNamesError = $state<{ datasetId: string; error: ApiError } | undefined>();

  /** Names the dataset's classes (one per class, in order); true when the server took them. */
  async setClassNames(datasetId: string, classNames: string[]): Promise<boolean> {
    this.classNamesError = undefined;
    const named = await api.invoke('datasets:setClassNames', { datasetId, classNames });
    if (named.error) {
      this.classNamesError = { datasetId, error: named.error };
      return false;
    }
    this.datasets = this.datasets.map((entry) => (entry.id === datasetId ? named.result : entry));
    // The preview's labels are the class names.
    if (this.datasetId === datasetId) {
      const preview = await api.invoke('datasets:preview', previewRequest(datasetId, this.dataset));
      if (preview.result && this.datasetId === datasetId) this.preview = preview.result;
    }
    return true;
  }

  /** New IDX files were chosen: the last error about the pair is stale. */
  idxFilesChanged(): void {
    this.idxError = undefined;
  }

  /**
   * An IDX images file and its labels file (MNIST's format, raw or .gz), uploaded together, with an optional
   * test pair that becomes the dataset's separate test set; true when opened.
   */
  async openIdx(images: File, labels: File, test?: { images: File; labels: File }): Promise<boolean> {
    this.idxError = undefined;
    const upload = async (file: File) => ({ fileName: file.name, base64: await fileToBase64(file) });
    const [imagesFile, labelsFile] = await Promise.all([upload(images), upload(labels)]);
    const testPair = test && { images: await upload(test.images), labels: await upload(test.labels) };
    this.idxError = await this.open({ kind: 'upload', ...imagesFile, labels: labelsFile, ...(testPair ? { test: testPair } : {}) });
    return this.idxError === undefined;
  }

  /** An image folder's files uploaded with their paths (one subfolder per class); true when opened. */
  async openFolder(folder: PickedFolder, image: ImageReading): Promise<boolean> {
    this.folderError = undefined;
    const files = await Promise.all(folder.files.map(async (entry) => ({ path: entry.path, base64: await fileToBase64(entry.file) })));
    this.folderError = await this.open({ kind: 'folder', name: folder.name, files, image });
    return this.folderError === undefined;
  }

  private async open(source: DatasetSource): Promise<ApiError | undefined> {
    this.opening = true;
    try {
      const opened = await api.invoke('datasets:open', { source });
      if (opened.error) return opened.error;
      this.datasets = [...this.datasets, opened.result];
      await this.selectDataset(opened.result.id);
      return undefined;
    } finally {
      this.opening = false;
    }
  }

  // ---- selection ----

  /** `restoring`: the session's workspace names it; the model kept with it stays (no default model). */
  async selectDataset(id: string, restoring = false): Promise<void> {
    const changed = id !== this.datasetId && !restoring;
    const previous = this.dataset;
    this.datasetId = id;
    if (changed && this.dataset) this.split.followDefault(previous, this.dataset);
    this.preview = undefined;
    if (this.dataset) this.imputation.prepare(this.dataset);
    const preview = await api.invoke('datasets:preview', previewRequest(id, this.dataset));
    if (preview.result && this.datasetId === id) this.preview = preview.result;
    await this.deps.selected(changed);
  }

  async closeDataset(id: string): Promise<void> {
    const closed = await api.invoke('datasets:close', { datasetId: id });
    if (closed.error) return;
    this.datasets = this.datasets.filter((entry) => entry.id !== id);
    this.imputation.forget(id);
    if (this.datasetId === id) {
      this.datasetId = undefined;
      this.preview = undefined;
      this.deps.deselected();
      const next = this.datasets[this.datasets.length - 1];
      if (next) await this.selectDataset(next.id);
    }
  }
}

/** Images: the first few of each class (thumbnails per class); tables: the first rows. */
function previewRequest(datasetId: string, dataset: DatasetInfo | undefined): PayloadOf<'datasets:preview'> {
  if (dataset?.kind !== 'images') return { datasetId, rows: 20 };
  // a handful per class, about 40 in all
  return { datasetId, perClass: Math.max(1, Math.min(8, Math.floor(40 / Math.max(1, dataset.classLabels.length)))) };
}
