// How the columns of a CSV file became features and a label (DESIGN §4). Stored in the model file
// (preprocessing.encoding) so that an evaluation file goes through the same transformation.
//
// Fields added by issue 13 are optional so that older model files still load. An encoding with
// `missingMarkers` reads later files leniently (missing cells stay NaN for the imputation, unseen categories
// become all-zero blocks or "other", non-numbers in a numeric column count as missing, all with a note); one
// without it (written before missing values existed) reads them strictly as before: every numeric cell must
// be a number and every category known, since such models have no imputation.
import { z } from 'zod';
import { dateParts } from './dates';

const columnIndex = z.number().int().nonnegative();
const positiveInt = z.number().int().positive();

export const encodedColumnSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('numeric'), name: z.string(), index: columnIndex }),
  /** One-hot: one feature per category, in this (sorted) order; with `other`, one more for every other value. */
  z.strictObject({
    kind: z.literal('categorical'),
    name: z.string(),
    index: columnIndex,
    categories: z.array(z.string()).min(1),
    other: z.literal(true).optional(),
  }),
  /** A date column (dates.ts) as numeric parts, one feature each, named `<column>.<part>`. */
  z.strictObject({
    kind: z.literal('date'),
    name: z.string(),
    index: columnIndex,
    parts: z.array(z.enum(dateParts)).min(1),
  }),
]);
export type EncodedColumn = z.infer<typeof encodedColumnSchema>;

const namedColumn = z.strictObject({ name: z.string(), index: columnIndex });

export const csvEncodingSchema = z.strictObject({
  /** Whether the training file had a header; with headers on both sides columns are matched by name. */
  hasHeader: z.boolean(),
  /** The training file's delimiter (informational; evaluation files are sniffed afresh). */
  delimiter: z.string().min(1),
  /** Fields per row of the training file. */
  columnCount: positiveInt,
  /** The label column (0-based index into the training file's fields), or null for unlabeled data and regression. */
  label: namedColumn.nullable(),
  /** Feature columns in feature order; columns not listed here were ignored. */
  columns: z.array(encodedColumnSchema).min(1),
  /** Names of the features after one-hot expansion (`color=red`) and date parts (`when.year`). */
  featureNames: z.array(z.string()),
  /** Class index → label text (empty for regression). */
  classLabels: z.array(z.string()),
  /** Features reshaped to [C,H,W] (pixel CSVs). */
  imageShape: z.tuple([positiveInt, positiveInt, positiveInt]).optional(),
  /** Every feature was divided by this (pixel CSVs with values 0..255). */
  pixelScale: z.number().positive().optional(),
  /** Cell texts read as missing (trimmed, any case); present on encodings written since issue 13. */
  missingMarkers: z.array(z.string()).optional(),
  /** Absent: classification. */
  task: z.enum(['classification', 'regression']).optional(),
  /** Regression: the target columns, in target order (`label` is null then). */
  targets: z.array(namedColumn).min(1).optional(),
  /** Columns the loader left out by itself, with why (informational). */
  leftOut: z.array(z.strictObject({ name: z.string(), index: columnIndex, reason: z.string() })).optional(),
});
export type CsvEncoding = z.infer<typeof csvEncodingSchema>;
