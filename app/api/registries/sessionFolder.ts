// The session's folder on disk: uploads (written under a random prefix, their extension kept for the
// loaders) and every run's checkpoint file. Made on first use; close() removes it once no run uses it.
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

// recursive: an uploaded image folder is one of the session's "files"
export const removeFile = (file: string | undefined): Promise<void> => (file ? fs.promises.rm(file, { force: true, recursive: true }) : Promise.resolve());
export const removeFiles = async (files: readonly string[]): Promise<void> => void (await Promise.all(files.map(removeFile)));

export class SessionFolder {
  private folder: string | undefined;
  /** A folder the session made (under the OS temp dir) is removed whole; a given one is the caller's. */
  private owned = false;
  /** Each upload the session wrote, by the name it was sent with. */
  private readonly shownNames = new Map<string, string>();

  constructor(given?: string) {
    this.folder = given;
  }

  /** Where the files are, once there is a folder. */
  get path(): string | undefined {
    return this.folder;
  }

  async ensure(): Promise<string> {
    if (!this.folder) {
      this.folder = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'nnstudio-uploads-'));
      this.owned = true;
    }
    await fs.promises.mkdir(this.folder, { recursive: true });
    return this.folder;
  }

  /** Writes uploaded bytes under a fresh name; the name keeps its extension for the loaders. */
  async writeUpload(fileName: string, base64: string): Promise<string> {
    const folder = await this.ensure();
    const safeName = path.basename(fileName).replace(/[^A-Za-z0-9._-]/g, '_');
    const file = path.join(folder, `${randomBytes(6).toString('hex')}-${safeName}`);
    await fs.promises.writeFile(file, Buffer.from(base64, 'base64'), { flag: 'wx' });
    this.shownNames.set(file, path.basename(fileName));
    return file;
  }

  /**
   * Writes an uploaded folder's files at their paths (checked by the schema: relative, no "..") under a fresh
   * folder named like `name`; returns that folder.
   */
  async writeUploadFolder(name: string, files: readonly { path: string; base64: string }[]): Promise<string> {
    const folder = await this.ensure();
    const root = path.join(folder, `${randomBytes(6).toString('hex')}-${path.basename(name).replace(/[^A-Za-z0-9._-]/g, '_')}`);
    await fs.promises.mkdir(root);
    this.shownNames.set(root, path.basename(name));
    for (const file of files) {
      const target = path.join(root, ...file.path.split('/'));
      // the schema allows no "..": this is a second lock on the same door
      if (!target.startsWith(root + path.sep)) throw new Error(`${file.path}: not inside the uploaded folder`);
      await fs.promises.mkdir(path.dirname(target), { recursive: true });
      await fs.promises.writeFile(target, Buffer.from(file.base64, 'base64'), { flag: 'wx' });
    }
    return root;
  }

  /** Where a run writes its checkpoint every epoch. */
  async checkpointFile(runId: string): Promise<string> {
    const folder = path.join(await this.ensure(), 'checkpoints');
    await fs.promises.mkdir(folder, { recursive: true });
    return path.join(folder, `${runId}.checkpoint.safetensors`);
  }

  /**
   * A message for the user: the session's files named as the user knows them, never by their temporary
   * paths ("/tmp/nnstudio-uploads-x/3f2a-train.csv" → "train.csv"); any other path in the folder (a run's
   * checkpoint) loses its folder ("run-1.checkpoint.safetensors").
   */
  showNames(message: string): string {
    let shown = message;
    for (const [file, name] of this.shownNames) shown = shown.split(file).join(name).split(path.basename(file)).join(name);
    if (this.folder === undefined) return shown;
    const rest = new RegExp(escapeRegExp(this.folder) + String.raw`[\\/]([^\s:"']+)`, 'g');
    return shown.replace(rest, (_, inside: string) => path.basename(inside));
  }

  /** Removes the folder the session made, or only `files` from a folder it was given. */
  async dispose(files: readonly string[]): Promise<void> {
    if (this.owned && this.folder) await fs.promises.rm(this.folder, { recursive: true, force: true });
    else await removeFiles(files);
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
