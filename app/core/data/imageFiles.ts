// Which files of an image folder are images (by extension) and which are not data (hidden): pure (no Node
// modules), so the browser's folder and ZIP reading (renderer/src/lib) and the server's (imageFolder.ts,
// zipFolder.ts) agree.

/** The extensions read as images (any case). Other files are left out with a note. */
export const imageExtensions = ['.png', '.jpg', '.jpeg', '.webp', '.gif', '.bmp', '.tif', '.tiff', '.avif'] as const;

/** Phones' HEIC photos: HEVC inside, which sharp's prebuilt libvips cannot decode (AVIF it can). */
const heicExtensions = ['.heic', '.heif'];

/** ".png" for "cats/001.PNG"; "" without an extension (as path.extname, for "/"- or "\"-separated names). */
function extensionOf(name: string): string {
  const base = name.replace(/^.*[\\/]/, '');
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot) : '';
}

export function isImageFile(name: string): boolean {
  return (imageExtensions as readonly string[]).includes(extensionOf(name).toLowerCase());
}

/** A HEIC or HEIF photo (left out, with what to do about it). */
export function isHeicFile(name: string): boolean {
  return heicExtensions.includes(extensionOf(name).toLowerCase());
}

/** Hidden files and folders (".DS_Store", ".git") and macOS's resource forks ("__MACOSX") are not data. */
export function isHiddenName(name: string): boolean {
  return name.startsWith('.') || name === '__MACOSX';
}
