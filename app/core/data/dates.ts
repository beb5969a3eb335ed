// Date cells (issue 13): ISO-like dates become numeric parts, so a model can use them.
//
// Accepted: yyyy-mm-dd and yyyy/mm/dd (one- or two-digit month and day), optionally followed by a space or
// T and hh:mm, hh:mm:ss or hh:mm:ss.fff, optionally a zone (Z, +hh, +hh:mm, +hhmm, which is ignored: the
// parts are the wall-clock time as written). The day must exist (2023-02-30 is not a date). Other forms
// (dd/mm/yyyy, mm/dd/yyyy, month names) are ambiguous or locale-bound and stay text.

export const dateParts = ['year', 'month', 'day', 'weekday', 'hour'] as const;
export type DatePart = (typeof dateParts)[number];

export interface DateValue {
  year: number;
  month: number; // 1..12
  day: number; // 1..31
  /** ISO order: 0 = Monday … 6 = Sunday. */
  weekday: number;
  /** The hour when a time was written, else undefined. */
  hour?: number;
}

const datePattern = /^(\d{4})([-/])(\d{1,2})\2(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?$/;

/** The date in a cell (trimmed), or undefined when it is not one of the accepted forms or not a real day. */
export function parseDate(text: string): DateValue | undefined {
  const trimmed = text.trim();
  if (trimmed.length < 8 || trimmed.length > 40) return undefined;
  const match = datePattern.exec(trimmed);
  if (match === null) return undefined;
  const year = Number(match[1]);
  const month = Number(match[3]);
  const day = Number(match[4]);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  let hour: number | undefined;
  if (match[5] !== undefined) {
    hour = Number(match[5]);
    if (hour > 23 || Number(match[6]) > 59 || (match[7] !== undefined && Number(match[7]) > 60)) return undefined;
  }
  const sundayFirst = new Date(Date.UTC(year, month - 1, day)).getUTCDay();
  return { year, month, day, weekday: (sundayFirst + 6) % 7, ...(hour !== undefined ? { hour } : {}) };
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** The value of one part of a date; `hour` is 0 for a date written without a time. */
export function datePart(date: DateValue, part: DatePart): number {
  return part === 'hour' ? (date.hour ?? 0) : date[part];
}
