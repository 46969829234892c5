/**
 * raw/<operation>.jsonl.gz: every payload as received, one JSON line per RawRecord, so a
 * run can be audited and re-transformed without calling the service again.
 *
 * RawSink.write is synchronous (extract does not wait on storage for each record); each file is
 * a gzip stream whose output is copied into the stored file chunk by chunk, each copy waiting
 * for the storage to take the last, and close() waits until every byte is stored. drained()
 * is the backpressure: once a file has more than `queuedBytes` waiting for gzip, it waits until
 * gzip has taken them all, so a fast source (a replay reads its records from disk) cannot
 * queue a run's raw/ in memory. Lines are gathered up to 64 KiB and handed to gzip in one call
 * (one zlib round trip per batch, not per record), at a fast level: raw/ is an audit copy, and
 * on a busy machine CPU matters more than the last few percent of size.
 *
 * A payload whose body as received is one line of UTF-8 is stored as those bytes, not written
 * out again from the parsed value: the same JSON, as the service sent it, for less CPU.
 */
import { once } from 'node:events';
import { createGzip, type Gzip } from 'node:zlib';
import { oneLineOfUtf8 } from '../api/json-array.ts';
import type { Operation } from '../api/resources.ts';
import type { RawRecord, RawSink } from '../records.ts';
import { ByteBatch } from '../storage/byte-batch.ts';
import { copyInto } from '../storage/copy.ts';
import type { Storage } from '../storage/types.ts';

export interface RawArchive extends RawSink {
  /** As RawSink's; the archive always has it. */
  drained(): Promise<void>;
  /** Records written so far, all operations together. */
  readonly count: number;
  /** Ends every file; resolves with the paths written in the storage (one per operation seen). */
  close(): Promise<string[]>;
  /** Stops writing and removes the partial files. */
  abort(): Promise<void>;
}

interface OpenFile {
  path: string;
  gzip: Gzip;
  done: Promise<void>;
  /** Lines not yet handed to gzip. */
  batch: ByteBatch;
}

const gzipLevel = 3;
/**
 * Bytes handed to one file's gzip and not yet compressed, past which drained() waits: more than
 * a listing page of 1 000 responses (about 3.5 MB), so an export paced by the network never
 * waits on it.
 */
const queuedBytes = 8 * 1024 * 1024;

/** Writes into `folder` of `storage`; a file appears on the first record of each operation. */
export function createRawArchive(storage: Storage, folder: string): RawArchive {
  const files = new Map<Operation, OpenFile>();
  let failure: unknown = null;
  let count = 0;
  let closed = false;

  const open = (operation: Operation): OpenFile => {
    const path = `${folder}/${operation}.jsonl.gz`;
    const gzip = createGzip({ level: gzipLevel });
    // Errors are kept in `failure` and reported by close.
    gzip.on('error', () => {});
    const done = copyInto(gzip, storage, path).then(
      () => {},
      (error: unknown) => {
        failure ??= error;
      },
    );
    const file: OpenFile = { path, gzip, done, batch: new ByteBatch() };
    files.set(operation, file);
    return file;
  };

  return {
    get count() {
      return count;
    },
    write(record: RawRecord, json?: Uint8Array): void {
      if (closed) throw new Error('raw archive: write after close');
      const file = files.get(record.operation) ?? open(record.operation);
      for (const part of recordLine(record, json)) {
        for (const chunk of file.batch.add(part)) file.gzip.write(chunk);
      }
      count += 1;
    },
    async drained(): Promise<void> {
      for (const file of files.values()) {
        // A file that fails ends `done` instead of draining; close() reports the failure.
        if (file.gzip.writableLength > queuedBytes)
          await Promise.race([once(file.gzip, 'drain'), file.done]).catch(() => {});
      }
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
    async abort(): Promise<void> {
      closed = true;
      for (const file of files.values()) file.gzip.destroy(new Error('aborted'));
      await Promise.all([...files.values()].map((file) => file.done));
    },
  };
}

/**
 * What stands between a raw line's other keys and its payload, which is always last (records
 * are built with it last, recordLine splices it in last). Its first occurrence in a line is that
 * key: a quote inside a JSON string is always escaped, and no other key of a record is "payload".
 */
export const payloadKey = ',"payload":';

/**
 * The record as one JSON line, in parts. `payload` is the record's last key, so with bytes that
 * hold it on one line, the line is the rest of the record with those bytes spliced in last.
 */
function recordLine(record: RawRecord, json: Uint8Array | undefined): (string | Uint8Array)[] {
  if (json === undefined || !oneLineOfUtf8(json)) return [`${JSON.stringify(record)}\n`];
  const rest = JSON.stringify({ ...record, payload: undefined });
  return [`${rest.slice(0, -1)}${payloadKey}`, json, '}\n'];
}

/** The record without its payload: a raw line's text before payloadKey. */
export type RecordHead = Omit<RawRecord, 'payload'>;

/**
 * A raw line's text before its payloadKey, parsed as the record without its payload (a reader
 * need not parse a payload to know what the record answers); null when it is not one.
 */
export function parseRecordHead(head: string): RecordHead | null {
  try {
    const record = JSON.parse(`${head}}`) as unknown;
    return typeof record === 'object' && record !== null && 'operation' in record
      ? (record as RecordHead)
      : null;
  } catch {
    return null;
  }
}
