// Missing values in CSV cells (issue 13): a cell whose trimmed text equals one of the markers, ignoring
// case, is missing, not text. Numeric columns keep NaN there until imputation (imputation.ts) fills it in.

/** The default markers: empty, NA, N/A, NaN, null, ?, - (compared trimmed and case-insensitively). */
export const defaultMissingMarkers: readonly string[] = ['', 'NA', 'N/A', 'NaN', 'null', '?', '-'];

/** A test for one set of markers; long cells are rejected without trimming or lower-casing them. */
export function missingTest(markers: readonly string[] = defaultMissingMarkers): (text: string) => boolean {
  const folded = new Set(markers.map((marker) => marker.trim().toLowerCase()));
  const longest = Math.max(0, ...[...folded].map((marker) => marker.length));
  return (text) => {
    if (text.length > longest) {
      const trimmed = text.trim();
      return trimmed.length <= longest && folded.has(trimmed.toLowerCase());
    }
    return folded.has(text.trim().toLowerCase());
  };
}
