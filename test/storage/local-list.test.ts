/**
 * LocalStorage.list while another process replaces files in the same folder (shards writing
 * their state objects side by side: each a temporary file renamed into place).
 */
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.ts';
import { withTempDir } from '../helpers/environment.ts';

describe('LocalStorage.list', () => {
  it('leaves out a file renamed away between reading the folder and reading the file', async () => {
    await withTempDir(async (dir) => {
      const storage = new LocalStorage(dir);
      let writing = true;
      const writer = (async () => {
        for (let i = 0; writing; i++) {
          const temp = join(dir, `study-${i % 4}.json.${i}.tmp`);
          await writeFile(temp, '{}');
          await rename(temp, join(dir, `study-${i % 4}.json`));
        }
      })();
      try {
        // A listing that reads each file after reading the folder meets temporaries already renamed.
        for (let listing = 0; listing < 200; listing++) {
          const paths: string[] = [];
          for await (const file of storage.list('')) paths.push(file.path);
          expect(paths.every((path) => /^study-\d\.json(\.\d+\.tmp)?$/.test(path))).toBe(true);
        }
      } finally {
        writing = false;
        await writer;
      }
    });
  });
});
