import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { LocalStorage } from '../../src/storage/local.ts';
import type { Storage } from '../../src/storage/types.ts';
import { withTempDir } from './environment.ts';

/** A local file as the writers name it: the storage of its folder, and its name there. */
export function localFile(path: string): [Storage, string] {
  return [new LocalStorage(dirname(path)), basename(path)];
}

export function localFolder(path: string): Storage {
  return new LocalStorage(path);
}

/** A temporary folder holding `name`, `size` random bytes, and the folder as a LocalStorage. */
export async function withRandomFile<T>(
  name: string,
  size: number,
  use: (store: LocalStorage, bytes: Buffer, dir: string) => Promise<T>,
): Promise<T> {
  return withTempDir(async (dir) => {
    const bytes = randomBytes(size);
    await writeFile(join(dir, name), bytes);
    return use(new LocalStorage(dir), bytes, dir);
  });
}
