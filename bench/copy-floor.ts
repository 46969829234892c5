/**
 * The floor of an erasure, as bench/erase.ts measures it: every file of the runs read, written
 * elsewhere and SHA-256'd in one pass (the hashing thread's copyRanges, as erase copies
 * media.zip), one file at a time per thread, a thread per core. An erasure that rewrites those
 * runs does at least this (each new file's hash goes in its manifest), so erase's time over
 * this one is what erase adds; this one's over cp's is what the hash costs beside a plain copy.
 */
import { mkdir, readdir, stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { HashingThread } from '../src/media/hashing-thread.ts';

export async function copyFloorStep(input: {
  from: string;
  to: string;
}): Promise<{ ms: number; files: number }> {
  const entries = await readdir(input.from, { recursive: true, withFileTypes: true });
  const files = entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
  const sizes = new Map(
    await Promise.all(files.map(async (file) => [file, (await stat(file)).size] as const)),
  );
  for (const file of files)
    await mkdir(dirname(join(input.to, relative(input.from, file))), { recursive: true });
  const threads = Array.from({ length: availableParallelism() }, () => new HashingThread());
  // Up before the clock (a round trip each): a thread takes a while to come up.
  await Promise.all(threads.map((thread) => thread.digestBody(new Uint8Array(0))));
  const queue = [...files];
  const started = performance.now();
  await Promise.all(
    threads.map(async (thread) => {
      for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
        const range = { start: 0, end: sizes.get(file) ?? 0 };
        await thread.copyRanges(file, [range], new Uint8Array(0), join(input.to, relative(input.from, file)));
      }
    }),
  );
  const ms = performance.now() - started;
  for (const thread of threads) await thread.close();
  return { ms, files: files.length };
}
