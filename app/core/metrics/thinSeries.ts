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
