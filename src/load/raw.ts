/**
 * <rawDir>/<operation>.jsonl.gz (the run's raw/ folder): every payload as received, one JSON line per RawRecord, so a run
 * can be audited and re-transformed without calling the service again.
 *
 * RawSink.write is synchronous (extract must not wait on disk); each file is a gzip stream
 * piped into the file, so Node's stream machinery carries the backpressure between them and
 * close() waits until every byte is on disk. Lines are gathered up to 64 KiB and handed to
 * gzip in one call (one zlib round trip per batch, not per record), at a fast level: raw/
 * is an audit copy, and on a busy machine CPU matters more than the last few percent of size.
 */
import { createWriteStream, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip, type Gzip } from 'node:zlib';
import type { Operation } from '../api/resources.ts';
import type { RawRecord, RawSink } from '../records.ts';
import { ByteBatch } from './file-sink.ts';

export interface RawArchive extends RawSink {
  /** Records written so far, all operations together. */
  readonly count: number;
  /** Ends every file; resolves with the absolute paths written (one per operation seen). */
  close(): Promise<string[]>;
}

interface OpenFile {
  path: string;
  gzip: Gzip;
  done: Promise<void>;
  /** Lines not yet handed to gzip. */
  batch: ByteBatch;
}

const gzipLevel = 3;

/** Writes into `rawDir` (created at once); a file appears on the first record of each operation. */
export function createRawArchive(rawDir: string): RawArchive {
  mkdirSync(rawDir, { recursive: true });
  const files = new Map<Operation, OpenFile>();
  let failure: unknown = null;
  let count = 0;
  let closed = false;

  const open = (operation: Operation): OpenFile => {
    const path = join(rawDir, `${operation}.jsonl.gz`);
    const gzip = createGzip({ level: gzipLevel });
    const done = pipeline(gzip, createWriteStream(path)).catch((error: unknown) => {
      failure ??= error;
    });
    const file: OpenFile = { path, gzip, done, batch: new ByteBatch() };
    files.set(operation, file);
    return file;
  };

  return {
    get count() {
      return count;
    },
    write(record: RawRecord): void {
      if (closed) throw new Error('raw archive: write after close');
      const file = files.get(record.operation) ?? open(record.operation);
      for (const chunk of file.batch.add(`${JSON.stringify(record)}\n`)) file.gzip.write(chunk);
      count += 1;
    },
    async close(): Promise<string[]> {
      closed = true;
      for (const file of files.values()) {
        const rest = file.batch.take();
        if (rest) file.gzip.write(rest);
        file.gzip.end();
      }
      await Promise.all([...files.values()].map((file) => file.done));
      if (failure !== null) throw failure;
      return [...files.values()].map((file) => file.path);
    },
  };
}
