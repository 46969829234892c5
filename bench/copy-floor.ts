/**
 * The floors of an erasure, as bench/erase.ts measures them, one file at a time per thread, a
 * thread per core (the hashing thread erase copies media.zip with):
 * - `copyFloorStep`: every file of the runs read, written elsewhere and SHA-256'd in one pass
 *   (its copyRanges). An erasure that rewrites those runs does at least this (each new file's
 *   hash goes in its manifest), so erase's time over this one is what erase adds; this one's
 *   over cp's is what the hash costs beside a plain copy.
 * - `hashFloorStep`: every file only read and SHA-256'd (the same copyRanges, written to
 *   /dev/null): the hash's own CPU time, which no erasure of these runs can do without.
 * Both report the process's CPU time (every thread's) beside the wall time.
 */
import { mkdir } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { HashingThread } from '../src/media/hashing-thread.ts';
import { LocalStorage } from '../src/storage/local.ts';

interface Floor {
  ms: number;
  cpu_s: number;
  files: number;
}

/** `work` on every file under `from`, a thread per core taking the next file. */
async function onEveryFile(
  from: string,
  work: (thread: HashingThread, file: { path: string; bytes: number }) => Promise<unknown>,
  before: (files: readonly { path: string }[]) => Promise<void> = async () => {},
): Promise<Floor> {
  const files: { path: string; bytes: number }[] = [];
  for await (const file of new LocalStorage(from).list('')) files.push(file);
  await before(files);
  const threads = Array.from({ length: availableParallelism() }, () => new HashingThread());
  // Up before the clock (a round trip each): a thread takes a while to come up.
  await Promise.all(threads.map((thread) => thread.digestBody(new Uint8Array(0))));
  const queue = [...files];
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    threads.map(async (thread) => {
      for (let file = queue.shift(); file !== undefined; file = queue.shift()) await work(thread, file);
    }),
  );
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  for (const thread of threads) await thread.close();
  return { ms, cpu_s: (used.user + used.system) / 1e6, files: files.length };
}

export function copyFloorStep(input: { from: string; to: string }): Promise<Floor> {
  return onEveryFile(
    input.from,
    (thread, file) =>
      thread.copyRanges(
        join(input.from, file.path),
        [{ start: 0, end: file.bytes }],
        new Uint8Array(0),
        join(input.to, file.path),
      ),
    async (files) => {
      for (const file of files) await mkdir(dirname(join(input.to, file.path)), { recursive: true });
    },
  );
}

export function hashFloorStep(input: { from: string }): Promise<Floor> {
  return onEveryFile(input.from, (thread, file) =>
    thread.copyRanges(
      join(input.from, file.path),
      [{ start: 0, end: file.bytes }],
      new Uint8Array(0),
      '/dev/null',
    ),
  );
}
