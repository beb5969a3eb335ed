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
