import { basename, dirname } from 'node:path';
import { LocalStorage } from '../../src/storage/local.ts';
import type { Storage } from '../../src/storage/types.ts';

/** A local file as the writers name it: the storage of its folder, and its name there. */
export function localFile(path: string): [Storage, string] {
  return [new LocalStorage(dirname(path)), basename(path)];
}

export function localFolder(path: string): Storage {
  return new LocalStorage(path);
}
