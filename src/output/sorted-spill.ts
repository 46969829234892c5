/**
 * Values read back in a chosen order without holding them all (an external merge sort).
 * Values are kept in memory, as JSON lines, up to a byte budget; a full buffer is sorted and
 * written as one run (a JSON-lines file in a local scratch folder), and reading merges the
 * runs. Memory holds one buffer, or while merging one line per run; too many runs are merged
 * in groups first, so the number of open files stays bounded too. A buffer that never filled
 * is sorted in memory and never touches the disk.
 */
import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { openLocalFile } from '../storage/local-file.ts';

export interface SortedSpillOptions<T, K> {
  /** A local folder of the run's own; runs are `<name>.run-<n>.jsonl` in it. */
  dir: string;
  name: string;
  keyOf(value: T): K;
  compare(a: K, b: K): number;
  /** Bytes of JSON held before a run is written (counted as UTF-16, what a string costs). */
  runBytes?: number;
  /** Runs merged at once. */
  fanIn?: number;
}

export interface SortedSpill<T> {
  add(value: T): Promise<void>;
  /** Every value added, in order; call once, after the last add. Its files go as it ends. */
  sorted(): AsyncIterable<T>;
  /** Removes its files (after a failure, or a `sorted()` not read to the end). */
  remove(): Promise<void>;
}

export const DEFAULT_RUN_BYTES = 2 ** 20;
const DEFAULT_FAN_IN = 16;
/** What a run's reader holds at a time beside its current line. */
const READ_CHUNK_BYTES = 16 * 1024;

interface Entry<K> {
  key: K;
  line: string;
  /** The value parsed from a run's line (for its key), handed on rather than parsed again. */
  value?: unknown;
}

export function createSortedSpill<T, K>(options: SortedSpillOptions<T, K>): SortedSpill<T> {
  const runBytes = options.runBytes ?? DEFAULT_RUN_BYTES;
  const fanIn = Math.max(2, options.fanIn ?? DEFAULT_FAN_IN);
  const byKey = (a: Entry<K>, b: Entry<K>) => options.compare(a.key, b.key);
  let buffer: Entry<K>[] = [];
  let buffered = 0;
  let runs: string[] = [];
  let made = 0;
  // Adds are chained so that concurrent callers never flush one buffer twice.
  let queue: Promise<void> = Promise.resolve();

  const writeRun = async (lines: Iterable<string> | AsyncIterable<string>): Promise<string> => {
    const path = join(options.dir, `${options.name}.run-${made++}.jsonl`);
    const file = await openLocalFile(path);
    try {
      let chunk = '';
      for await (const line of lines) {
        chunk += `${line}\n`;
        if (chunk.length >= 2 ** 16) {
          await file.write(chunk);
          chunk = '';
        }
      }
      await file.write(chunk);
      await file.close();
    } catch (error) {
      await file.abort();
      throw error;
    }
    return path;
  };

  const flush = async (): Promise<void> => {
    const full = buffer.sort(byKey);
    buffer = [];
    buffered = 0;
    runs.push(await writeRun(full.map((entry) => entry.line)));
  };

  const merged = (paths: readonly string[]): AsyncGenerator<Entry<K>> =>
    mergeRuns(
      paths.map((path) => readRun(path, options)),
      byKey,
    );

  const removeRuns = async (paths: readonly string[]) => {
    await Promise.all(paths.map((path) => rm(path, { force: true })));
  };

  return {
    add(value) {
      queue = queue.then(async () => {
        const line = JSON.stringify(value);
        buffer.push({ key: options.keyOf(value), line });
        buffered += line.length * 2;
        if (buffered >= runBytes) await flush();
      });
      return queue;
    },
    async *sorted() {
      await queue;
      if (runs.length === 0) {
        const all = buffer.sort(byKey);
        buffer = [];
        for (const entry of all) yield JSON.parse(entry.line) as T;
        return;
      }
      if (buffer.length > 0) await flush();
      while (runs.length > fanIn) {
        const group = runs.slice(0, fanIn);
        const combined = await writeRun(linesOf(merged(group)));
        await removeRuns(group);
        runs = [...runs.slice(fanIn), combined];
      }
      try {
        for await (const entry of merged(runs)) yield (entry.value ?? JSON.parse(entry.line)) as T;
      } finally {
        await removeRuns(runs);
        runs = [];
      }
    },
    async remove() {
      await queue.catch(() => {});
      buffer = [];
      await removeRuns(runs);
      runs = [];
    },
  };
}

async function* linesOf<K>(entries: AsyncGenerator<Entry<K>>): AsyncGenerator<string> {
  for await (const entry of entries) yield entry.line;
}

async function* readRun<T, K>(path: string, options: SortedSpillOptions<T, K>): AsyncGenerator<Entry<K>> {
  for await (const line of fileLines(path)) {
    const value = JSON.parse(line) as T;
    yield { key: options.keyOf(value), line, value };
  }
}

/**
 * A run's lines, read a small chunk at a time, each line a string of its own. The merge holds
 * one line per run: readline would queue up to 1,024 lines a run, each a slice that keeps its
 * whole chunk alive, so memory would grow with the number of runs (with the responses).
 */
async function* fileLines(path: string): AsyncGenerator<string> {
  const input = createReadStream(path, { highWaterMark: READ_CHUNK_BYTES });
  let partial: Buffer[] = [];
  try {
    for await (const chunk of input as AsyncIterable<Buffer>) {
      let start = 0;
      for (let end = chunk.indexOf(0x0a); end >= 0; end = chunk.indexOf(0x0a, start)) {
        const piece = chunk.subarray(start, end);
        const line = (partial.length === 0 ? piece : Buffer.concat([...partial, piece])).toString('utf8');
        partial = [];
        start = end + 1;
        if (line !== '') yield line;
      }
      if (start < chunk.length) partial.push(chunk.subarray(start));
    }
    const last = Buffer.concat(partial).toString('utf8');
    if (last !== '') yield last;
  } finally {
    input.destroy();
  }
}

/** A k-way merge over sorted sources; equal keys keep the order of the sources (stable). */
async function* mergeRuns<K>(
  sources: readonly AsyncGenerator<Entry<K>>[],
  compare: (a: Entry<K>, b: Entry<K>) => number,
): AsyncGenerator<Entry<K>> {
  const heads: { entry: Entry<K>; source: number }[] = [];
  const before = (a: (typeof heads)[number], b: (typeof heads)[number]) =>
    compare(a.entry, b.entry) < 0 || (compare(a.entry, b.entry) === 0 && a.source < b.source);
  try {
    for (const [source, run] of sources.entries()) {
      const next = await run.next();
      if (!next.done) heads.push({ entry: next.value, source });
    }
    // A handful of runs: a linear scan for the smallest head is as fast as a heap and simpler.
    while (heads.length > 0) {
      let at = 0;
      for (let i = 1; i < heads.length; i++) if (before(heads[i]!, heads[at]!)) at = i;
      const head = heads[at]!;
      yield head.entry;
      const next = await sources[head.source]!.next();
      if (next.done) heads.splice(at, 1);
      else head.entry = next.value;
    }
  } finally {
    await Promise.all(sources.map((source) => source.return(undefined)));
  }
}
