// A CSV file chosen but not opened yet: how it is read (delimiter, header) and the role of each column.
// The roles become datasets:open's csv options (columns by 0-based index, so files without a header or with
// repeated names work too).
import type { PayloadOf } from '../../../../app/api/types';
import { cleanCsvHead, findPreamble, guessDecimal, guessHeader, readCsvHead, rowsOfHead, sampleCsv, type SampledColumn } from '../csvSample';
import type { DecimalMark } from '../../../../app/core/data/decimalMark';
import { preambleApplies } from '../../../../app/core/data/sklearnPreamble';
import type { PickedFile } from '../platform';

export type ColumnRole = 'feature' | 'label' | 'ignore' | 'categorical';

export type CsvOptions = NonNullable<Extract<PayloadOf<'datasets:open'>['source'], { kind: 'upload' }>['csv']>;

export const roleChoices: { value: ColumnRole; title: string }[] = [
  // Sends nothing: the loader infers the type (number, category, date, ID-like, …) from the whole file.
  { value: 'feature', title: 'Feature (type inferred)' },
  { value: 'categorical', title: 'Categorical (one-hot)' },
  { value: 'label', title: 'Label (class or number)' },
  { value: 'ignore', title: 'Ignore' },
];

/** Header names that usually hold the class (compared without case). */
const labelNames = ['label', 'labels', 'class', 'target', 'species', 'y'];

/**
 * A column's role when it is not the label: a feature whose type the loader infers from the whole file (so a
 * date, an ID or a numeric column with "NA" cells is read as such, not forced to one-hot from a few rows).
 */
function plainRole(): ColumnRole {
  return 'feature';
}

/** The label is the column named like one (label, class, target, species, y), else the last column. */
export function defaultRoles(columns: readonly SampledColumn[]): ColumnRole[] {
  const named = columns.findIndex((column) => labelNames.includes(column.name.trim().toLowerCase()));
  const label = named >= 0 ? named : columns.length - 1;
  return columns.map((_column, index) => (index === label ? 'label' : plainRole()));
}

export class CsvSetup {
  /** A browser File, or (Electron) a path chosen in the native dialog with its first bytes. */
  readonly file: PickedFile;
  private readonly head: string;
  delimiter = $state(',');
  /** The numbers' decimal mark: a comma in most European spreadsheets' CSVs (with ';' between fields). */
  decimal = $state<DecimalMark>('.');
  header = $state(true);
  roles = $state<ColumnRole[]>([]);
  /** The file has no label column: rows to predict with a trained model (it cannot be trained on). */
  unlabeled = $state(false);
  /** scikit-learn's `n_samples,n_features,<class names>` first row: skipped, as the server skips it. */
  preamble = $derived.by(() => {
    const found = findPreamble(this.head, this.delimiter);
    return preambleApplies(found, this.header) ? found : undefined;
  });
  sample = $derived.by(() => sampleCsv(this.head, this.delimiter, this.header, this.preamble !== undefined, this.decimal));
  columns = $derived(this.sample.columns);
  labelIndex = $derived(this.roles.indexOf('label'));

  /** What stops the file from opening as set up, in words; undefined when it can be opened. */
  problem = $derived.by(() => {
    // Nothing to set up: saying so beats asking for columns a file without content cannot have.
    if (this.head.trim() === '') return `${this.file.name} is empty.`;
    if (this.unlabeled) {
      if (this.columns.length < 1) return 'The file has no columns; check the delimiter.';
      return this.roles.some((role) => role === 'feature' || role === 'categorical') ? undefined : 'Keep at least one feature column.';
    }
    if (this.columns.length < 2) return 'The file needs at least two columns (features and a label); check the delimiter.';
    if (this.labelIndex < 0) return 'Choose the label column: set one column’s role to Label.';
    if (!this.roles.some((role) => role === 'feature' || role === 'categorical')) return 'Keep at least one feature column.';
    return undefined;
  });

  private constructor(file: PickedFile, head: string) {
    this.file = file;
    // Excel's `sep=;` line and '#' notes at the top are skipped as the server skips them
    const rows = rowsOfHead(head);
    this.head = rows.text;
    this.delimiter = rows.delimiter;
    this.decimal = rows.decimal;
    this.header = guessHeader(this.head, this.delimiter, findPreamble(this.head, this.delimiter) !== undefined, this.decimal);
    this.roles = defaultRoles(this.columns);
  }

  /** Reads the file's first rows and proposes roles; a file that is not text (a workbook) gives what it is instead. */
  static async read(picked: PickedFile): Promise<CsvSetup | { problem: string }> {
    if (picked.headProblem !== undefined) return { problem: `${picked.name}: ${picked.headProblem}` };
    // Electron's dialog reads at most 64 KiB: a head that long was cut.
    const head = picked.file ? await readCsvHead(picked.file) : { text: cleanCsvHead(picked.head ?? '', (picked.head?.length ?? 0) >= 60_000) };
    return 'problem' in head ? { problem: `${picked.name}: ${head.problem}` } : new CsvSetup(picked, head.text);
  }

  /** A new delimiter gives new columns: their roles start again from the defaults. */
  setDelimiter(delimiter: string): void {
    this.delimiter = delimiter;
    this.decimal = guessDecimal(this.head, delimiter);
    this.roles = defaultRoles(this.columns);
  }

  /** The decimal mark changes which columns read as numbers; the roles stay. */
  setDecimal(decimal: DecimalMark): void {
    this.decimal = decimal;
  }

  /** The header row only renames columns; the roles stay. */
  setHeader(header: boolean): void {
    this.header = header;
  }

  /** Without a label column every column is a feature (or ignored); choosing a label again undoes it. */
  setUnlabeled(unlabeled: boolean): void {
    this.unlabeled = unlabeled;
    if (unlabeled && this.labelIndex >= 0) this.roles[this.labelIndex] = plainRole();
    if (!unlabeled && this.labelIndex < 0) this.roles = defaultRoles(this.columns);
  }

  /** One label only: a new label column hands the old one its plain role. */
  setRole(index: number, role: ColumnRole): void {
    if (role === 'label') this.unlabeled = false;
    if (role === 'label' && this.labelIndex >= 0 && this.labelIndex !== index) {
      this.roles[this.labelIndex] = plainRole();
    }
    this.roles[index] = role;
  }

  /** datasets:open's csv options for these roles. */
  options(): CsvOptions {
    const where = (wanted: ColumnRole) => this.roles.flatMap((role, index) => (role === wanted ? [index] : []));
    const categorical = where('categorical');
    const ignoreColumns = where('ignore');
    return {
      delimiter: this.delimiter,
      decimal: this.decimal,
      header: this.header,
      ...(this.unlabeled ? { unlabeled: true } : { labelColumn: this.labelIndex }),
      ...(categorical.length > 0 ? { categorical } : {}),
      ...(ignoreColumns.length > 0 ? { ignoreColumns } : {}),
    };
  }
}
