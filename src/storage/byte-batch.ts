/**
 * Small writes (a few rows of one response) gathered into one buffer and handed on whole:
 * one file system call or upload chunk per 64 KiB instead of one per write, and the
 * strings die young (they are not kept until the batch is full).
 */
const coalesceBytes = 64 * 1024;

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
