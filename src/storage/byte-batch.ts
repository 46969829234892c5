/**
 * Small writes (a few rows of one response) gathered into one buffer and handed on whole:
 * one file system call or upload chunk per 64 KiB instead of one per write, and the
 * strings die young (they are not kept until the batch is full). The buffer starts small and
 * doubles as a file grows, and none is held between batches: a run of many small studies
 * keeps thousands of small files open, and 64 KiB each would be most of its memory.
 */
const coalesceBytes = 64 * 1024;
const firstBytes = 1024;

export class ByteBatch {
  #buffer: Buffer | null = null;
  /** The size of the next buffer: the last one's, so a large file allocates once per batch. */
  #nextSize = firstBytes;
  #used = 0;

  constructor(private readonly capacity = coalesceBytes) {}

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
    const buffer = this.#room(this.#used + bytes);
    if (typeof chunk === 'string') buffer.write(chunk, this.#used);
    else buffer.set(chunk, this.#used);
    this.#used += bytes;
    return ready;
  }

  /** The bytes gathered so far (the next add starts a new buffer), or null when empty. */
  take(): Uint8Array | null {
    if (this.#used === 0 || this.#buffer === null) return null;
    const full = this.#buffer.subarray(0, this.#used);
    this.#buffer = null;
    this.#used = 0;
    return full;
  }

  /** A buffer of at least `needed` bytes (at most the capacity) holding what is gathered. */
  #room(needed: number): Buffer {
    const held = this.#buffer;
    if (held !== null && held.length >= needed) return held;
    let size = Math.max(this.#nextSize, held === null ? 0 : held.length * 2);
    while (size < needed) size *= 2;
    size = Math.min(size, this.capacity);
    const grown = Buffer.allocUnsafe(size);
    if (held !== null) held.copy(grown, 0, 0, this.#used);
    this.#buffer = grown;
    this.#nextSize = size;
    return grown;
  }
}
