/**
 * rejects.jsonl: every record that failed validation, raw, with the reason, one JSON line each.
 * The file is created at once, so an empty file means "nothing rejected".
 */
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import type { Reject, RejectSink } from '../records.ts';

export interface RejectsFile extends RejectSink {
  readonly path: string;
  readonly count: number;
  close(): Promise<void>;
}

export function createRejectsFile(path: string): RejectsFile {
  // Opened (and so created) right away, asynchronously; writes queue until it is open.
  const stream = createWriteStream(path);
  let failure: unknown = null;
  stream.on('error', (error) => {
    failure ??= error;
  });
  let count = 0;
  return {
    path,
    get count() {
      return count;
    },
    write(reject: Reject): void {
      stream.write(`${JSON.stringify(reject)}\n`);
      count += 1;
    },
    async close(): Promise<void> {
      if (!stream.writableEnded && failure === null) {
        stream.end();
        await once(stream, 'close');
      }
      if (failure !== null) throw failure;
    },
  };
}
