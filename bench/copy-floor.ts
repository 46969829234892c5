/**
 * The floor of an erasure, as bench/erase.ts measures it: every file of the runs read, written
 * elsewhere and SHA-256'd in one pass, one file at a time per worker thread, a thread per core.
 * An erasure that rewrites those runs does at least this (each new file's hash goes in its
 * manifest), so erase's time over this one is what erase adds; this one's over cp's is what
 * the hash costs beside a plain copy.
 */
import { readdir } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { Worker } from 'node:worker_threads';

const workerSource = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const { closeSync, mkdirSync, openSync, readSync, writeSync } = require('node:fs');
const { dirname } = require('node:path');
const buffer = Buffer.allocUnsafe(1024 * 1024);
parentPort.on('message', ({ from, to }) => {
  mkdirSync(dirname(to), { recursive: true });
  const hash = createHash('sha256');
  const input = openSync(from, 'r');
  const output = openSync(to, 'w');
  for (;;) {
    const read = readSync(input, buffer, 0, buffer.length, null);
    if (read === 0) break;
    hash.update(buffer.subarray(0, read));
    for (let at = 0; at < read; ) at += writeSync(output, buffer, at, read - at);
  }
  closeSync(input);
  closeSync(output);
  parentPort.postMessage(hash.digest('hex'));
});
`;

export async function copyFloorStep(input: {
  from: string;
  to: string;
}): Promise<{ ms: number; files: number }> {
  const entries = await readdir(input.from, { recursive: true, withFileTypes: true });
  const files = entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
  const workers = Array.from(
    { length: availableParallelism() },
    () => new Worker(workerSource, { eval: true }),
  );
  // Started before the clock: a thread takes a while to come up.
  await Promise.all(
    workers.map((worker) => new Promise<void>((resolve) => worker.once('online', () => resolve()))),
  );
  const queue = [...files];
  const started = performance.now();
  await Promise.all(
    workers.map(async (worker) => {
      for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
        worker.postMessage({ from: file, to: join(input.to, relative(input.from, file)) });
        await new Promise((resolve) => worker.once('message', resolve));
      }
    }),
  );
  const ms = performance.now() - started;
  for (const worker of workers) await worker.terminate();
  return { ms, files: files.length };
}
