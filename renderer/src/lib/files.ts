// Browser files to what the API takes: uploads travel as base64 in one message.

export async function fileToBase64(file: File): Promise<string> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = '';
  const chunk = 0x8000;
  for (let at = 0; at < bytes.length; at += chunk) {
    binary += String.fromCharCode(...bytes.subarray(at, at + chunk));
  }
  return btoa(binary);
}

/** The first line of a CSV file: its column names (for the label column choice). */
export async function csvHeader(file: File): Promise<string[]> {
  return csvHeaderOf(await file.slice(0, 64 * 1024).text());
}

/** The column names in the first line of a CSV file's text (its delimiter guessed from that line). */
export function csvHeaderOf(head: string): string[] {
  const line = head.split(/\r?\n/, 1)[0] ?? '';
  const delimiter = [',', ';', '\t'].reduce((best, candidate) => (line.split(candidate).length > line.split(best).length ? candidate : best), ',');
  return line.split(delimiter).map((name) => name.trim().replace(/^"(.*)"$/, '$1'));
}

/** base64 to bytes (atob: a `fetch('data:…')` would need `data:` in the CSP's connect-src, which serve does not allow). */
export function base64ToBytes(base64: string): Uint8Array<ArrayBuffer> {
  const binary = atob(base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/**
 * Hands bytes to the user as a download named `fileName`: a Blob, its object URL and a click on an
 * <a download>. The click is a navigation (a download), which serve's CSP does not restrict (it has no
 * sandbox and no navigation directive; form-action is for forms only), and the blob: URL is the page's own
 * origin, so `download` keeps the name. The URL is revoked once the browser has taken it.
 */
export function saveBytes(fileName: string, bytes: Uint8Array<ArrayBuffer>, type = 'application/octet-stream'): void {
  const url = URL.createObjectURL(new Blob([bytes], { type }));
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  link.rel = 'noopener';
  link.style.display = 'none';
  document.body.append(link);
  try {
    link.click();
  } finally {
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  }
}
