// How numbers read on screen: one place, so every table agrees.

export function formatCount(value: number): string {
  return value.toLocaleString('en-US');
}

/** 1234567 -> "1.23 M". */
export function formatCompact(value: number): string {
  if (value < 1000) return String(value);
  const units = ['k', 'M', 'G', 'T'];
  let scaled = value;
  let unit = -1;
  while (scaled >= 1000 && unit < units.length - 1) {
    scaled /= 1000;
    unit += 1;
  }
  return `${scaled.toFixed(scaled < 10 ? 2 : scaled < 100 ? 1 : 0)} ${units[unit]}`;
}

export function formatPercent(value: number | null | undefined, digits = 1): string {
  return value === null || value === undefined || !Number.isFinite(value) ? '–' : `${(value * 100).toFixed(digits)}%`;
}

export function formatDecimal(value: number | null | undefined, digits = 4): string {
  return value === null || value === undefined || !Number.isFinite(value) ? '–' : value.toFixed(digits);
}

export function formatShape(shape: readonly number[] | undefined): string {
  return shape ? shape.join(' × ') : '–';
}

/** 75 -> "1 min 15 s"; under 10 s with a tenth ("0.4 s"), so short runs still compare. */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '–';
  if (seconds < 9.95) return `${Math.max(0, seconds).toFixed(1)} s`;
  const whole = Math.max(0, Math.round(seconds));
  if (whole < 60) return `${whole} s`;
  const minutes = Math.floor(whole / 60);
  if (minutes < 60) return `${minutes} min ${whole % 60} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 ** 2) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
}

/**
 * A value in the data's own units (a price, a temperature): four significant digits, thousands grouped,
 * so 123456.7 reads "123,457" and 0.001234 "0.001234".
 */
export function formatMeasure(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  if (Math.abs(value) >= 1000) return value.toLocaleString('en-US', { maximumFractionDigits: 0 });
  return String(Number(value.toPrecision(4)));
}

/** R² to three decimals ("0.953", "-1.204"). */
export function formatR2(value: number | null | undefined): string {
  return formatDecimal(value, 3);
}

/** "1 epoch", "2 epochs": a count with its noun, singular for exactly one. */
export function counted(count: number, noun: string, nounPlural = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : nounPlural}`;
}
