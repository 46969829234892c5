/**
 * What the current dataset needs from where the output lives: the subset of the storage
 * seam (src/storage) it uses, with the same names and shapes, so that a `Storage` is a
 * `CurrentStore`. Paths are relative and '/'-separated.
 *
 * One promise matters here: a file created with `create` is not visible under its name until
 * `close` resolves, so a reader (DuckDB, the next run) never sees half a part.
 */
import { createReadStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { openLocalFile } from '../storage/local-file.ts';

export interface CurrentFile {
  path: string;
  bytes: number;
}

export interface CurrentOutput {
  write(chunk: string | Uint8Array): Promise<void>;
  close(): Promise<unknown>;
  abort(): Promise<void>;
}

export interface CurrentStore {
  create(path: string): Promise<CurrentOutput>;
  /** The whole file, or null when there is none. */
  read(path: string): Promise<Buffer | null>;
  /** The file's bytes; `end` is exclusive. */
  readStream(path: string, range?: { start: number; end: number }): Promise<Readable>;
  /** Every file under `prefix` (recursively), paths relative to it. */
  list(prefix: string): AsyncIterable<CurrentFile>;
  delete(path: string): Promise<void>;
}

/** Temporary names of parts being written on a file system; never read, removed when found. */
export const WRITING_SUFFIX = '.writing';

/** The current dataset in a local folder: parts are written under a hidden name and renamed. */
export function localCurrentStore(root: string): CurrentStore {
  const absolute = (path: string) => join(root, ...path.split('/'));
  return {
    async create(path) {
      const target = absolute(path);
      await mkdir(dirname(target), { recursive: true });
      const temp = join(
        dirname(target),
        `.${process.pid}-${Date.now()}-${basenameOf(path)}${WRITING_SUFFIX}`,
      );
      const sink = await openLocalFile(temp);
      return {
        write: (chunk) => sink.write(chunk),
        async close() {
          await sink.close();
          await rename(temp, target);
        },
        abort: () => sink.abort(),
      };
    },
    async read(path) {
      try {
        return await readFile(absolute(path));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw error;
      }
    },
    async readStream(path, range) {
      return createReadStream(absolute(path), range ? { start: range.start, end: range.end - 1 } : {});
    },
    list: (prefix) => listLocal(absolute(prefix)),
    delete: (path) => rm(absolute(path), { force: true }),
  };
}

function basenameOf(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

async function* listLocal(dir: string, base = dir): AsyncIterable<CurrentFile> {
  let entries: import('node:fs').Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* listLocal(path, base);
    else if (entry.isFile()) {
      yield { path: relative(base, path).split(sep).join('/'), bytes: (await stat(path)).size };
    }
  }
}
