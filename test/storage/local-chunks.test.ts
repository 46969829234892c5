/**
 * LocalStorage.readChunks: a range of a file in chunks of at most the size asked for, read
 * into two buffers in turn; each chunk is the file's bytes at its place, kept before the
 * next is asked for (a caller that holds a chunk past that sees it overwritten).
 */
import { describe, expect, it } from 'vitest';
import { LocalStorage } from '../../src/storage/local.ts';
import { withTempDir } from '../helpers/environment.ts';
import { withRandomFile } from '../helpers/storage.ts';

async function chunksOf(store: LocalStorage, range: { start: number; end: number }, size: number) {
  const chunks: Buffer[] = [];
  for await (const chunk of store.readChunks('file.bin', range, size)) chunks.push(Buffer.from(chunk));
  return chunks;
}

describe('LocalStorage.readChunks', () => {
  it('gives the range in chunks of the size asked for, the last one shorter', async () => {
    await withRandomFile('file.bin', 10_000, async (store, bytes) => {
      const chunks = await chunksOf(store, { start: 123, end: 9_001 }, 1_000);
      expect(chunks.map((chunk) => chunk.length)).toEqual([...Array(8).fill(1_000), 878]);
      expect(Buffer.concat(chunks).equals(bytes.subarray(123, 9_001))).toBe(true);
    });
  });

  it('gives nothing for an empty range and what there is of a range past the end', async () => {
    await withRandomFile('file.bin', 2_500, async (store, bytes) => {
      expect(await chunksOf(store, { start: 7, end: 7 }, 1_000)).toEqual([]);
      const past = await chunksOf(store, { start: 2_000, end: 5_000 }, 1_000);
      expect(Buffer.concat(past).equals(bytes.subarray(2_000))).toBe(true);
    });
  });

  it('fails naming the file when it is not there', async () => {
    await withTempDir(async (dir) => {
      const store = new LocalStorage(dir);
      await expect(chunksOf(store, { start: 0, end: 10 }, 4)).rejects.toThrow(/file\.bin/);
    });
  });
});
