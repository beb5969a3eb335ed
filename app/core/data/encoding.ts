// How the columns of a CSV file became features and a label (DESIGN §4). Stored in the model file
// (preprocessing.encoding) so that an evaluation file goes through the same transformation.
import { z } from 'zod';

const columnIndex = z.number().int().nonnegative();
const positiveInt = z.number().int().positive();

export const encodedColumnSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('numeric'), name: z.string(), index: columnIndex }),
  /** One-hot: one feature per category, in this (sorted) order. */
  z.strictObject({
    kind: z.literal('categorical'),
    name: z.string(),
    index: columnIndex,
    categories: z.array(z.string()).min(1),
  }),
]);
export type EncodedColumn = z.infer<typeof encodedColumnSchema>;

export const csvEncodingSchema = z.strictObject({
  /** Whether the training file had a header; with headers on both sides columns are matched by name. */
  hasHeader: z.boolean(),
  /** The training file's delimiter (informational; evaluation files are sniffed afresh). */
  delimiter: z.string().min(1),
  /** Fields per row of the training file. */
  columnCount: positiveInt,
  /** The label column (0-based index into the training file's fields), or null for unlabeled data. */
  label: z.strictObject({ name: z.string(), index: columnIndex }).nullable(),
  /** Feature columns in feature order; columns not listed here were ignored. */
  columns: z.array(encodedColumnSchema).min(1),
  /** Names of the features after one-hot expansion (`color=red`). */
  featureNames: z.array(z.string()),
  /** Class index → label text. */
  classLabels: z.array(z.string()),
  /** Features reshaped to [C,H,W] (pixel CSVs). */
  imageShape: z.tuple([positiveInt, positiveInt, positiveInt]).optional(),
  /** Every feature was divided by this (pixel CSVs with values 0..255). */
  pixelScale: z.number().positive().optional(),
});
export type CsvEncoding = z.infer<typeof csvEncodingSchema>;
