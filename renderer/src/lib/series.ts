// Chart series for the renderer; the thinned per-step series is shared with the server (app/core/metrics/thinSeries).
import type { Point } from '../../../app/core/metrics/thinSeries';

export { addPoint, emptySeries, type Point, type ThinSeries } from '../../../app/core/metrics/thinSeries';

/** One line of a chart; a colour is a CSS value or a theme variable name ("--chart-1"). */
export interface ChartSeries {
  label: string;
  color: string;
  points: Point[];
  /** Epoch-end values: dots and a thicker line; per-step values: a thin line. */
  markers?: boolean;
  /** A dashed line (e.g. training beside validation in the same colour). */
  dashed?: boolean;
}

/** A chart's numbers as a table: one row per x (epoch), one column per series. */
export interface SeriesTable {
  columns: string[];
  rows: { x: number; values: (number | undefined)[] }[];
}

/**
 * The epoch-end series of a chart as rows by epoch (the per-step line, hundreds of points, stays in the
 * chart); when no series has markers, all of them.
 */
export function seriesTable(series: ChartSeries[]): SeriesTable {
  const marked = series.filter((entry) => entry.markers);
  const shown = marked.length > 0 ? marked : series;
  const xs = [...new Set(shown.flatMap((entry) => entry.points.map((point) => point.x)))].sort((a, b) => a - b);
  const byX = shown.map((entry) => new Map(entry.points.map((point) => [point.x, point.y])));
  return { columns: shown.map((entry) => entry.label), rows: xs.map((x) => ({ x, values: byX.map((values) => values.get(x)) })) };
}
