/**
 * Node's file-system errors (ENOSPC, EACCES, EROFS, ENOTDIR, EEXIST, EMFILE, ...) said in plain
 * words with the path, as a SystemError, instead of "unexpected error ... report it".
 */
import { SystemError } from '../errors.ts';

type Errno = NodeJS.ErrnoException & { code: string };

/** What each code means, for the path it happened on. */
const plainWords: Record<string, (path: string, syscall: string | undefined) => string> = {
  ENOSPC: (path) => `the disk is full: no space left on the device holding ${path}`,
  EDQUOT: (path) => `the disk quota is used up: no space left for ${path}`,
  EACCES: (path) => `permission denied: ${path}`,
  EPERM: (path) => `operation not permitted (permission denied): ${path}`,
  EROFS: (path) => `read-only file system: ${path} cannot be written`,
  ENOTDIR: (path) => `${path}: a part of this path is a file, not a folder`,
  EEXIST: (path, syscall) =>
    syscall === 'mkdir' ? `${path} exists and is not a folder` : `${path} already exists`,
  EISDIR: (path) => `${path} is a folder, not a file`,
  EMFILE: (path) => `too many open files (at ${path}): raise the limit (ulimit -n) or lower the concurrency`,
  ENFILE: (path) => `the system has too many open files (at ${path}); try again later`,
  ENOENT: (path) => `no such file or folder: ${path}`,
  ENAMETOOLONG: (path) => `the path is too long: ${path}`,
  EIO: (path) => `input/output error (a failing disk or network file system) at ${path}`,
};

/** Codes that mean the machine must change, not the pipeline: always exit 1. */
const environmentCodes = new Set(['ENOSPC', 'EDQUOT', 'EMFILE', 'ENFILE', 'EIO']);

/**
 * A full disk (or a used-up quota) in `error` or in the errors it wraps: the error itself,
 * whose path (or context's file) says where. Never one record's or one study's failure.
 */
export function diskFullError(error: unknown): { error: Error; path: string | undefined } | null {
  let current: unknown = error;
  for (let depth = 0; current instanceof Error && depth < 10; depth++) {
    const { code, path } = current as NodeJS.ErrnoException;
    const errno = (current as { errno?: unknown }).errno;
    if ((code && diskFull.has(code)) || (typeof errno === 'string' && diskFull.has(errno))) {
      const file = (current as { context?: { file?: string } }).context?.file;
      return { error: current, path: path ?? file };
    }
    current = current.cause;
  }
  return null;
}

const diskFull = new Set(['ENOSPC', 'EDQUOT']);

export function isSystemError(error: unknown): error is Errno {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return error instanceof Error && typeof code === 'string' && code in plainWords;
}

export interface SystemErrorOptions {
  /** What the path is, e.g. "output folder (output.dir / --out)"; starts the message. */
  what?: string;
  /** The path to name when the error carries none (a write on an open file has no path). */
  path?: string;
  /** The path came from the user's configuration: exit 2 unless the machine is at fault. */
  configured?: boolean;
}

/** The error as a SystemError with a plain message; other errors are returned as they are. */
export function describeSystemError(error: unknown, options: SystemErrorOptions = {}): unknown {
  if (!isSystemError(error)) return error;
  const path = error.path ?? options.path ?? 'a file';
  const words = (plainWords[error.code] as (typeof plainWords)[string])(path, error.syscall);
  const configured = options.configured === true && !environmentCodes.has(error.code);
  return new SystemError(error.code, options.what ? `${options.what}: ${words}` : words, {
    exitCode: configured ? 2 : 1,
    context: { file: path },
    cause: error,
  });
}
