// chart.js with only what our charts use (smaller bundle): lines, the scatter plot and the bar chart; the
// theme's colours read from CSS.
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  ScatterController,
  Tooltip,
} from 'chart.js';

Chart.register(LineController, LineElement, PointElement, ScatterController, BarController, BarElement, LinearScale, CategoryScale, Legend, Tooltip);

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
