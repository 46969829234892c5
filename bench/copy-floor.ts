/**
 * The floor of an erasure, as bench/erase.ts measures it: every file of the runs read, written
 * elsewhere and SHA-256'd in one pass (the hashing thread's copyRanges, as erase copies
 * media.zip), one file at a time per thread, a thread per core. An erasure that rewrites those
 * runs does at least this (each new file's hash goes in its manifest), so erase's time over
 * this one is what erase adds; this one's over cp's is what the hash costs beside a plain copy.
 */
import { mkdir } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { HashingThread } from '../src/media/hashing-thread.ts';
import { LocalStorage } from '../src/storage/local.ts';

export async function copyFloorStep(input: {
  from: string;
  to: string;
}): Promise<{ ms: number; files: number }> {
  const files: { path: string; bytes: number }[] = [];
  for await (const file of new LocalStorage(input.from).list('')) files.push(file);
  for (const file of files) await mkdir(dirname(join(input.to, file.path)), { recursive: true });
  const threads = Array.from({ length: availableParallelism() }, () => new HashingThread());
  // Up before the clock (a round trip each): a thread takes a while to come up.
  await Promise.all(threads.map((thread) => thread.digestBody(new Uint8Array(0))));
  const queue = [...files];
  const started = performance.now();
  await Promise.all(
    threads.map(async (thread) => {
      for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
        const range = { start: 0, end: file.bytes };
        await thread.copyRanges(
          join(input.from, file.path),
          [range],
          new Uint8Array(0),
          join(input.to, file.path),
        );
      }
    }),
  );
  const ms = performance.now() - started;
  for (const thread of threads) await thread.close();
  return { ms, files: files.length };
}
