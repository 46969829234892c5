/**
 * What the current dataset needs from where the output lives: the subset of the storage
 * seam (src/storage) it uses, with the same names and shapes, so that a `Storage` is a
 * `CurrentStore`. Paths are relative and '/'-separated.
 *
 * One promise matters here: a file created with `create` is not visible under its name until
 * `close` resolves, so a reader (DuckDB, the next run) never sees half a part. Both storages
 * keep it: an object appears when its upload completes, and a local file is written under a
 * hidden name (ending in WRITING_SUFFIX) and renamed into place.
 */
import type { Readable } from 'node:stream';

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

/** Temporary names of parts being written on a file system (the local storage's). */
export { WRITING_SUFFIX } from '../storage/local-file.ts';
