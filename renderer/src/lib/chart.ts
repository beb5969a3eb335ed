// chart.js with only what our charts use (smaller bundle): lines, the scatter plots (linear or log axes) and the bar chart; the
// theme's colours read from CSS.
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Legend,
  LinearScale,
  LogarithmicScale,
  LineController,
  LineElement,
  PointElement,
  ScatterController,
  Tooltip,
} from 'chart.js';
import type { ChartConfiguration, ChartType } from 'chart.js';
import { untrack } from 'svelte';
import type { Attachment } from 'svelte/attachments';

Chart.register(LineController, LineElement, PointElement, ScatterController, BarController, BarElement, LinearScale, LogarithmicScale, CategoryScale, Legend, Tooltip);

export { Chart };

export function themeColor(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

/** Calls `redraw` when the colour scheme changes (the theme's colours are baked into a chart); returns the unsubscriber. */
export function onThemeChange(redraw: () => void): () => void {
  const scheme = window.matchMedia('(prefers-color-scheme: dark)');
  scheme.addEventListener('change', redraw);
  return () => scheme.removeEventListener('change', redraw);
}

/**
 * A canvas attachment (`{@attach drawnChart(() => config)}`) for charts drawn whole from their data: it draws
 * what `configure` returns, and draws it again when the state `configure` reads changes or the colour scheme
 * does (the theme's colours are baked into a chart). The chart is destroyed with the canvas.
 */
export function drawnChart<Type extends ChartType>(configure: () => ChartConfiguration<Type>): Attachment<HTMLCanvasElement> {
  return (canvas) => {
    let chart = new Chart(canvas, configure());
    const stopWatching = onThemeChange(() => {
      chart.destroy();
      chart = new Chart(canvas, untrack(configure));
    });
    return () => {
      stopWatching();
      chart.destroy();
    };
  };
}
