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

/**
 * Small writes copied into one buffer, handed on whole: the strings die young (they are not
 * kept until the batch is full), and the stream gets one chunk per `capacity` bytes.
 */
export class ByteBatch {
  #buffer: Buffer;
  #used = 0;

  constructor(private readonly capacity = coalesceBytes) {
    this.#buffer = Buffer.allocUnsafe(capacity);
  }

  get size(): number {
    return this.#used;
  }

  /** Adds a chunk; returns the chunks now ready to be written, in order (often none). */
  add(chunk: string | Uint8Array): Uint8Array[] {
    const bytes = typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
    const ready: Uint8Array[] = [];
    if (this.#used + bytes > this.capacity) {
      const full = this.take();
      if (full) ready.push(full);
    }
    if (bytes >= this.capacity) {
      ready.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
      return ready;
    }
    if (typeof chunk === 'string') this.#buffer.write(chunk, this.#used);
    else this.#buffer.set(chunk, this.#used);
    this.#used += bytes;
    return ready;
  }

  /** The bytes gathered so far (a new buffer takes their place), or null when empty. */
  take(): Uint8Array | null {
    if (this.#used === 0) return null;
    const full = this.#buffer.subarray(0, this.#used);
    this.#buffer = Buffer.allocUnsafe(this.capacity);
    this.#used = 0;
    return full;
  }
}

export class FileSink {
  readonly path: string;
  #stream: WriteStream;
  #failure: unknown = null;
  #bytes = 0;
  #batch = new ByteBatch();

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
    const ready = this.#batch.add(chunk);
    this.#bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
    for (const bytes of ready) await this.#write(bytes);
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

  /** Hands the gathered bytes to the stream. */
  async #flush(): Promise<void> {
    const bytes = this.#batch.take();
    if (bytes) await this.#write(bytes);
  }

  /** One chunk to the stream; waits for it to drain when its buffer is full. */
  async #write(bytes: Uint8Array): Promise<void> {
    if (!this.#stream.write(bytes)) {
      try {
        await once(this.#stream, 'drain');
      } catch (error) {
        throw this.#error(error);
      }
    }
  }

  /** Stops writing and removes the partial file. */
  async abort(): Promise<void> {
    this.#batch.take();
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
