/**
 * rejects.jsonl: every record that failed validation, raw, with the reason, one JSON line each.
 * The file is created at once, so an empty file means "nothing rejected".
 */
import { PassThrough } from 'node:stream';
import type { Reject, RejectSink } from '../records.ts';
import { copyInto } from '../storage/copy.ts';
import type { Storage } from '../storage/types.ts';

export interface RejectsFile extends RejectSink {
  readonly path: string;
  readonly count: number;
  close(): Promise<void>;
  /** Stops writing and removes the partial file. */
  abort(): Promise<void>;
}

export function createRejectsFile(storage: Storage, path: string): RejectsFile {
  // Opened (and so created) right away, asynchronously; lines queue until it is open.
  const lines = new PassThrough();
  let failure: unknown = null;
  const done = copyInto(lines, storage, path).then(
    () => {},
    (error: unknown) => {
      failure ??= error;
    },
  );
  let count = 0;
  return {
    path,
    get count() {
      return count;
    },
    write(reject: Reject): void {
      if (failure === null) lines.write(`${JSON.stringify(reject)}\n`);
      count += 1;
    },
    async close(): Promise<void> {
      if (!lines.writableEnded) lines.end();
      await done;
      if (failure !== null) throw failure;
    },
    async abort(): Promise<void> {
      lines.destroy(new Error('aborted'));
      await done;
    },
  };
}
