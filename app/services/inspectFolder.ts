// `nnstudio inspect --data photos/` (or a ZIP of it): what an image folder holds before anything trains on
// it: its classes and how many images each has, the shape the images are read at, and what was left out
// or could not be read (the notes the Data screen shows).
import { classCounts, type Dataset } from '../core/data/dataset';
import { loadDataSource, type FolderSource } from './dataSources';

export interface FolderInspection {
  kind: 'folder';
  source: string;
  images: number;
  classes: { name: string; images: number }[];
  /** [channels, height, width] as read (the default size and colour rules of docs/DATA.md, or the flags). */
  shape: number[];
  fit: string;
  notes: string[];
}

export async function inspectFolder(source: FolderSource): Promise<FolderInspection> {
  const dataset: Dataset = await loadDataSource(source);
  const counts = classCounts(dataset);
  return {
    kind: 'folder',
    source: source.path,
    images: dataset.count,
    classes: dataset.classLabels.map((name, i) => ({ name, images: counts[i] ?? 0 })),
    shape: [...dataset.featureShape],
    fit: dataset.imageFit ?? 'crop',
    notes: [...(dataset.notes ?? [])],
  };
}

/** The inspection as text: a line of totals, a table of classes, the shape read, then the notes. */
export function formatFolderInspection(inspection: FolderInspection): string {
  const nameWidth = Math.max(5, ...inspection.classes.map((entry) => entry.name.length));
  const [channels, height, width] = inspection.shape;
  const smallest = Math.min(...inspection.classes.map((entry) => entry.images));
  const largest = Math.max(...inspection.classes.map((entry) => entry.images));
  return [
    `${inspection.source}: an image folder, ${inspection.images} images in ${inspection.classes.length} classes`,
    `read as ${channels} x ${height} x ${width} (channels x height x width), ${inspection.fit === 'crop' ? 'centre crop' : 'letterbox'}`,
    ...(largest > 2 * smallest ? [`the classes are unbalanced: ${smallest} to ${largest} images (--class-weight balanced weighs them evenly)`] : []),
    '',
    `${'class'.padEnd(nameWidth)}  images`,
    ...inspection.classes.map((entry) => `${entry.name.padEnd(nameWidth)}  ${String(entry.images).padStart(6)}`),
    ...(inspection.notes.length > 0 ? ['', 'notes:', ...inspection.notes.map((note) => `  ${note}`)] : []),
  ].join('\n');
}
