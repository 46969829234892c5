/**
 * What every output file promises, on a local file: the bytes in order however the writes
 * are sized (small ones gathered, a large one after them handed over together), and a size
 * and SHA-256 that match the file on disk, computed here or on the hashing thread.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HashingThread } from '../../src/media/hashing-thread.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import type { CreateOptions } from '../../src/storage/types.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'output-file-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes of every size class: a few bytes, just under and over the 64 KiB batch, a megabyte. */
function writes(): Buffer[] {
  const sizes = [10, 200, 70_000, 3, 65_535, 1, 65_536, 1_000_000, 5, 1_500_000, 40];
  return sizes.map((size) => randomBytes(size));
}

describe('an output file', () => {
  it.each([
    ['hashed on this thread', () => ({ options: {} as CreateOptions, close: async () => {} })],
    [
      'hashed on the hashing thread',
      () => {
        const thread = new HashingThread(2 * 1024 * 1024);
        return { options: { sha256: thread.runningSha256() }, close: () => thread.close() };
      },
    ],
  ])('keeps the bytes in order and reports their size and SHA-256 (%s)', async (_, hashing) => {
    const { options, close } = hashing();
    const file = await new LocalStorage(dir).create('out.bin', options);
    const chunks = writes();
    // One buffer reused for every write, as a writer may once write resolves.
    const reused = Buffer.alloc(1_500_000);
    for (const chunk of chunks) {
      chunk.copy(reused);
      await file.write(reused.subarray(0, chunk.length));
    }
    const stored = await file.close();
    await close();
    const onDisk = await readFile(join(dir, 'out.bin'));
    expect(onDisk.equals(Buffer.concat(chunks))).toBe(true);
    expect(stored).toEqual({
      path: 'out.bin',
      bytes: onDisk.length,
      sha256: createHash('sha256').update(onDisk).digest('hex'),
    });
  });
});
