/**
 * An output file written through a stream with backpressure: each write waits for the
 * stream to drain when its buffer is full, so memory stays flat however many rows arrive.
 * Small writes (a few rows of one response) are gathered up to `coalesceBytes` and handed
 * to the stream as one chunk: one file system call per 64 KiB instead of one per write.
 */

import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import { RunError } from '../errors.ts';

/** Pending small writes are handed to the stream once they reach this many bytes. */
const coalesceBytes = 64 * 1024;

export class FileSink {
  readonly path: string;
  #stream: WriteStream;
  #failure: unknown = null;
  #bytes = 0;
  #pending: (string | Uint8Array)[] = [];
  #pendingBytes = 0;

  /** Creates (or truncates) the file; a missing folder or a permission problem fails here. */
  static async open(path: string): Promise<FileSink> {
    const sink = new FileSink(path);
    try {
      await once(sink.#stream, 'open');
    } catch (error) {
      throw sink.#error(error);
    }
    return sink;
  }

  private constructor(path: string) {
    this.path = path;
    this.#stream = createWriteStream(path, { flags: 'w' });
    // Keep the first error; it is reported by the next write or by close.
    this.#stream.on('error', (error) => {
      this.#failure ??= error;
    });
  }

  /** Bytes handed to the stream so far. */
  get bytes(): number {
    return this.#bytes;
  }

  async write(chunk: string | Uint8Array): Promise<void> {
    this.#throwIfFailed();
    const size = typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
    this.#bytes += size;
    this.#pending.push(chunk);
    this.#pendingBytes += size;
    if (this.#pendingBytes >= coalesceBytes) await this.#flush();
  }

  async close(): Promise<void> {
    this.#throwIfFailed();
    try {
      await this.#flush();
      this.#stream.end();
      await finished(this.#stream);
    } catch (error) {
      throw this.#error(error);
    }
  }

  /** Hands the pending writes to the stream as one chunk; waits for it to drain if full. */
  async #flush(): Promise<void> {
    if (this.#pending.length === 0) return;
    const pending = this.#pending;
    this.#pending = [];
    this.#pendingBytes = 0;
    const chunk =
      pending.length === 1
        ? (pending[0] as string | Uint8Array)
        : pending.every((c) => typeof c === 'string')
          ? pending.join('')
          : Buffer.concat(pending.map((c) => (typeof c === 'string' ? Buffer.from(c) : c)));
    if (!this.#stream.write(chunk)) {
      try {
        await once(this.#stream, 'drain');
      } catch (error) {
        throw this.#error(error);
      }
    }
  }

  /** Stops writing and removes the partial file. */
  async abort(): Promise<void> {
    this.#pending = [];
    this.#stream.destroy();
    await rm(this.path, { force: true });
  }

  #throwIfFailed(): void {
    if (this.#failure !== null) throw this.#error(this.#failure);
  }

  #error(cause: unknown): RunError {
    return new RunError(`could not write ${this.path}`, { context: { file: this.path }, cause });
  }
}
