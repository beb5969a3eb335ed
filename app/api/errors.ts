// Errors as the UI API answers them: values with the field, code, row and column a face can point at.
import * as path from 'node:path';
import type { z } from 'zod';
import { DataError } from '../core/data/errors';
import type { Channel } from './schemas';
import type { ApiError } from './types';

/** A payload error naming the field: "datasets:open: source.path: expected string, received undefined". */
export function validationError(channel: Channel, issues: readonly z.core.$ZodIssue[]): ApiError {
  const issue = issues[0];
  const fieldPath = issue.path.map(String);
  if (issue.code === 'unrecognized_keys' && issue.keys.length > 0) fieldPath.push(issue.keys[0]);
  const field = fieldPath.length > 0 ? fieldPath.join('.') : undefined;
  return { message: `${channel}: ${field ? `${field}: ` : 'payload: '}${issue.message}`, field };
}

export function errorValue(error: unknown): ApiError {
  if (error instanceof Error) {
    const { code, field } = error as { code?: unknown; field?: unknown };
    const value: ApiError = {
      message: error.message,
      ...(typeof code === 'string' ? { code } : {}),
      ...(typeof field === 'string' ? { field } : {}),
    };
    // A data file's row and column let a face point at the column at fault.
    if (error instanceof DataError) {
      if (error.row !== undefined) value.row = error.row;
      if (error.column !== undefined) value.column = error.column;
    }
    return value;
  }
  return { message: String(error) };
}

/** An upload's temporary path or name means nothing to the user: messages name the file as sent. */
export function showUploadNames(error: unknown, uploads: readonly { file: string; name: string }[]): void {
  if (!(error instanceof Error)) return;
  for (const { file, name } of uploads) {
    error.message = error.message.split(file).join(name).split(path.basename(file)).join(name);
  }
}
