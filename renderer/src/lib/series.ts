// A chart series that stays small however long training runs: at most `capacity` points, thinned by
// keeping every other point and doubling the stride whenever it fills up.

export interface Point {
  x: number;
  y: number;
}

export interface ThinSeries {
  points: Point[];
  /** Keep one of every `stride` offered points. */
  stride: number;
  offered: number;
}

export function emptySeries(): ThinSeries {
  return { points: [], stride: 1, offered: 0 };
}

/** A new series with the point added (or skipped); the input is not changed. */
export function addPoint(series: ThinSeries, point: Point, capacity = 400): ThinSeries {
  const offered = series.offered + 1;
  if ((offered - 1) % series.stride !== 0) return { ...series, offered };
  let points = [...series.points, point];
  let stride = series.stride;
  if (points.length > capacity) {
    points = points.filter((_, index) => index % 2 === 0);
    stride *= 2;
  }
  return { points, stride, offered };
}

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
