// Project files (.nnstudio): a session as JSON (its datasets by where their files are, the workspace of the
// screens, and the run-history ids of its finished runs), written atomically and read back with every field
// checked, so a damaged or foreign file is named with what is wrong rather than half-opened.
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from '../core/files/atomic';
import { runIdPattern } from '../core/runs/runFile';
import { csvOptionsSchema, imageReadingSchema } from './schemas';
import { workspaceSchema } from './workspace';
import { dataDirectory } from '../services/runs';

export const projectExtension = '.nnstudio';
export const projectFormat = 'nnstudio-project';
/** Far beyond any real project (the workspace is bounded too): a larger file is not one of ours. */
const maxProjectBytes = 8 * 1024 * 1024;

const id = z.string().min(1).max(100);
const filePath = z.string().min(1).max(4096);
const limit = z.number().int().positive().optional();

/** Names given to an IDX or MNIST dataset's classes (datasets:setClassNames). */
const classNames = z.array(z.string().min(1).max(1000)).min(1).max(10_000).optional();
const dataSourceSchema = z.union([
  z.strictObject({ kind: z.literal('mnist'), split: z.enum(['train', 'test']), limit, classNames }),
  z.strictObject({
    kind: z.literal('idx'), imagesPath: filePath, labelsPath: filePath.optional(), limit, classNames,
    /** The pair's own test pair (its separate test set). */
    test: z.strictObject({ imagesPath: filePath, labelsPath: filePath.optional() }).optional(),
  }),
  z.strictObject({ kind: z.literal('csv'), path: filePath, options: csvOptionsSchema.optional() }),
  /** An image folder as it was read (its size, channels and fit pinned when opened). */
  z.strictObject({ kind: z.literal('folder'), path: filePath, limit, classNames, ...imageReadingSchema.shape }),
]);

const projectSchema = z.strictObject({
  format: z.literal(projectFormat),
  version: z.literal(1),
  savedAt: z.string().max(100),
  /** The session's datasets as it had them; the workspace refers to them by these ids. */
  datasets: z.array(z.strictObject({ id, name: z.string().max(500), source: dataSourceSchema })).max(200),
  workspace: workspaceSchema,
  /** Finished runs by their run-history id (their models open again from the history). */
  runs: z.array(z.strictObject({ savedRunId: z.string().regex(runIdPattern), name: z.string().max(500) })).max(10_000),
});

export type Project = z.infer<typeof projectSchema>;
export type ProjectDataSource = z.infer<typeof dataSourceSchema>;

/** Where project names without a folder go: the user's data folder's projects/. */
export function projectsDirectory(): string {
  return path.join(dataDirectory(), 'projects');
}

/** The session restored at start-up: kept in the data folder after every change. */
export function lastSessionFile(): string {
  return path.join(dataDirectory(), `last-session${projectExtension}`);
}

/** A name ("my project") or a path, as the file it means: under projectsDirectory() without a folder, with the extension. */
export function projectFilePath(nameOrPath: string): string {
  const trimmed = nameOrPath.trim();
  if (!trimmed) throw Object.assign(new Error('give the project a name'), { field: 'path' });
  const withExtension = trimmed.toLowerCase().endsWith(projectExtension) ? trimmed : `${trimmed}${projectExtension}`;
  return path.isAbsolute(withExtension) || /[\\/]/.test(withExtension) ? path.resolve(withExtension) : path.join(projectsDirectory(), withExtension);
}

/** The folder beside a project where the files uploaded in its session are kept ("p.nnstudio" → "p-data/"). */
export function projectDataFolder(projectFile: string): string {
  return `${projectFile.slice(0, -projectExtension.length)}-data`;
}

/** Writes the project atomically; a project its own reader would refuse is not written (the error says why). */
export async function writeProject(file: string, project: Project): Promise<void> {
  const checked = projectSchema.safeParse(project);
  if (!checked.success) throw new Error(`the project cannot be saved: ${checked.error.issues[0].path.join('.')}: ${checked.error.issues[0].message}`);
  await fsp.mkdir(path.dirname(file), { recursive: true });
  await writeFileAtomic(file, `${JSON.stringify(project, null, 2)}\n`);
}

/** Reads and checks a project file; the error names the file and the first field that is wrong. */
export async function readProject(file: string): Promise<Project> {
  let text: string;
  try {
    const stat = await fsp.stat(file);
    if (stat.size > maxProjectBytes) throw new Error(`it is ${stat.size} bytes, more than a project file can be`);
    text = await fsp.readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(`cannot open the project ${file}: ${code === 'ENOENT' ? 'there is no such file' : (error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`${file} is not a project file: ${(error as Error).message}`);
  }
  const parsed = projectSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue.path.length ? issue.path.join('.') : 'the file';
    throw new Error(`${file} is not a project file NN Studio can open: ${where}: ${issue.message}`);
  }
  return parsed.data;
}
