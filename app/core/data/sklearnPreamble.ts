// scikit-learn's bundled CSVs (iris.csv, wine_data.csv, breast_cancer.csv, boston_house_prices.csv) start with
// `n_samples,n_features,<class names>`. Pure (no Node): the loader and the renderer's CSV preview both use it, so
// the columns the Data screen shows are the ones the server reads.
import { isNumberText } from './numbers';

export interface SklearnPreamble {
  samples: number;
  features: number;
  /** Class names by target index ([] when the first row has none). */
  classes: string[];
  /** The row after the preamble names the columns (boston_house_prices.csv) rather than being data. */
  headerFollows: boolean;
}

/**
 * The preamble when the first rows have that form: two integers, then names or empty cells, over rows of
 * n_features + 1 fields (the last one the target, a class index into those names).
 */
export function detectSklearnPreamble(rows: readonly (readonly string[])[]): SklearnPreamble | undefined {
  if (rows.length < 2) return undefined;
  const [first, second] = rows;
  if (first.length < 2 || !/^\s*\d+\s*$/.test(first[0]) || !/^\s*\d+\s*$/.test(first[1])) return undefined;
  const features = Number(first[1]);
  if (features < 1 || second.length !== features + 1) return undefined;
  const names = first.slice(2).map((cell) => cell.trim());
  if (names.some((name) => isNumberText(name))) return undefined;
  const numbers = second.filter(isNumberText).length;
  if (numbers !== 0 && numbers !== second.length) return undefined; // the second row: all data or all header
  if (first.length !== second.length && names.some((name) => name === '') && names.some((name) => name !== '')) return undefined;
  return { samples: Number(first[0]), features, classes: names.filter((name) => name !== ''), headerFollows: numbers === 0 };
}

/**
 * Whether a read with this header choice takes the first row as a preamble: always when the header is left to
 * the loader or said absent (the row after it is data); with a header said present, only where that row is one
 * (a first row of column names that happens to fit the pattern stays the header).
 */
export function preambleApplies(preamble: SklearnPreamble | undefined, header: boolean | undefined): preamble is SklearnPreamble {
  return preamble !== undefined && (header !== true || preamble.headerFollows);
}
