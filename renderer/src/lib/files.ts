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
  const head = await file.slice(0, 64 * 1024).text();
  const line = head.split(/\r?\n/, 1)[0] ?? '';
  const delimiter = [',', ';', '\t'].reduce((best, candidate) => (line.split(candidate).length > line.split(best).length ? candidate : best), ',');
  return line.split(delimiter).map((name) => name.trim().replace(/^"(.*)"$/, '$1'));
}
