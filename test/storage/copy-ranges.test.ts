/**
 * Storage.copyRanges: a file written as ranges of another followed by some bytes, by the
 * hashing thread (a local source on a local storage) or through this thread (no thread given):
 * the same bytes, size and SHA-256 either way, and a source too short fails naming the file,
 * leaving nothing under the name.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HashingThread } from '../../src/media/hashing-thread.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { withRandomFile } from '../helpers/storage.ts';

const thread = new HashingThread();
afterAll(() => thread.close());

const ranges = [
  { start: 0, end: 1_000 },
  { start: 1_500, end: 2_600_000 },
  { start: 2_700_000, end: 3_000_000 },
];

describe('Storage.copyRanges', () => {
  it('writes the ranges then the tail, the same on the thread and through this thread', async () => {
    await withRandomFile('source.zip', 3_000_000, async (source, bytes, dir) => {
      const to = new LocalStorage(join(dir, 'out'));
      await source.put('out/.keep', '');
      const tail = Buffer.from('PK\u0005\u0006 the directory');
      const expected = Buffer.concat([...ranges.map((r) => bytes.subarray(r.start, r.end)), tail]);
      const sha256 = createHash('sha256').update(expected).digest('hex');
      const by = { storage: source, path: 'source.zip', ranges };
      const onThread = await to.copyRanges('a/media.zip', by, tail, thread);
      const here = await to.copyRanges('b/media.zip', by, tail);
      expect(onThread).toEqual({ path: 'a/media.zip', bytes: expected.length, sha256 });
      expect(here).toEqual({ path: 'b/media.zip', bytes: expected.length, sha256 });
      expect((await readFile(join(dir, 'out', 'a', 'media.zip'))).equals(expected)).toBe(true);
      expect((await readFile(join(dir, 'out', 'b', 'media.zip'))).equals(expected)).toBe(true);
    });
  });

  it('fails naming the source when it ends before a range, and leaves no file', async () => {
    await withRandomFile('source.zip', 1_000, async (source, _bytes, dir) => {
      const to = new LocalStorage(join(dir, 'out'));
      await source.put('out/.keep', '');
      const by = { storage: source, path: 'source.zip', ranges: [{ start: 0, end: 5_000 }] };
      await expect(to.copyRanges('media.zip', by, Buffer.alloc(0), thread)).rejects.toThrow(
        /source\.zip ends at 1000, before 5000/,
      );
      expect(await readdir(join(dir, 'out'))).toEqual(['.keep']);
    });
  });
});
