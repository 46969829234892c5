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
import type { Storage } from '../storage/types.ts';

export type CurrentStore = Pick<
  Storage,
  'create' | 'describe' | 'moveIn' | 'moveFolderIn' | 'read' | 'readStream' | 'list' | 'delete' | 'deleteAll'
>;

/** Temporary names of parts being written on a file system (the local storage's). */
export { WRITING_SUFFIX } from '../storage/local-temporaries.ts';
