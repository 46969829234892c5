/**
 * The memory downloaded media may be held in, across all downloads and the files waiting
 * for the zip writer. Taking never waits: a download that does not fit goes to a temporary
 * file instead, so the budget bounds memory without slowing anything.
 *
 * The budget hands out the buffers themselves and takes them back: a buffer given back is
 * handed out again to a later body that fits in it, so the bytes are allocated once per run
 * instead of once per file (each fresh buffer costs garbage collection and page faults).
 *
 * The memory is shared (SharedArrayBuffer), so that the hashing thread reads a body where it
 * lies instead of from copies sent to it (src/media/hashing-thread.ts).
 */

/** Buffers are allocated in steps of this, so that bodies of similar sizes share them. */
const defaultGranuleBytes = 64 * 1024;

export class MemoryBudget {
  /** Handed out and not yet given back, by their memory. */
  readonly #inUse = new Set<SharedArrayBuffer>();
  /** Given back, waiting for another body. */
  readonly #idle: SharedArrayBuffer[] = [];
  #inUseBytes = 0;
  /** Bytes of every buffer the budget holds: in use and idle. */
  #heldBytes = 0;
  #allocations = 0;

  constructor(
    readonly totalBytes: number,
    /** Largest single file kept in memory; larger ones always go to a temporary file. */
    readonly maxFileBytes: number,
    private readonly granuleBytes = defaultGranuleBytes,
  ) {}

  /**
   * A buffer of exactly `bytes` for one body, or null when the file is over the per-file
   * cap or the budget has no room. Its memory stays the budget's: give it back once the
   * body is in the zip (or was dropped), and do not use it afterwards.
   */
  take(bytes: number): Buffer | null {
    if (bytes > this.maxFileBytes) return null;
    if (bytes === 0) return Buffer.alloc(0); // an empty body costs nothing
    const memory = this.#reuse(bytes) ?? this.#allocate(bytes);
    if (memory === null) return null;
    this.#inUse.add(memory);
    this.#inUseBytes += memory.byteLength;
    return Buffer.from(memory, 0, bytes);
  }

  /** Takes back a buffer `take` handed out (anything else is ignored). */
  give(body: Buffer): void {
    const memory = body.buffer as SharedArrayBuffer;
    if (!this.#inUse.delete(memory)) return;
    this.#inUseBytes -= memory.byteLength;
    this.#idle.push(memory);
  }

  /** Bytes that bodies could still take (idle buffers count as free). */
  get freeBytes(): number {
    return this.totalBytes - this.#inUseBytes;
  }

  /** Buffers allocated so far; fewer than the bodies taken when buffers were reused. */
  get allocations(): number {
    return this.#allocations;
  }

  /** The smallest idle buffer that holds `bytes`. */
  #reuse(bytes: number): SharedArrayBuffer | null {
    let best = -1;
    for (let i = 0; i < this.#idle.length; i++) {
      const size = (this.#idle[i] as SharedArrayBuffer).byteLength;
      if (size >= bytes && (best < 0 || size < (this.#idle[best] as SharedArrayBuffer).byteLength)) best = i;
    }
    return best < 0 ? null : (this.#idle.splice(best, 1)[0] as SharedArrayBuffer);
  }

  /** A new buffer, after dropping idle ones that are too small if the budget needs their room. */
  #allocate(bytes: number): SharedArrayBuffer | null {
    const size = Math.min(Math.ceil(bytes / this.granuleBytes) * this.granuleBytes, this.maxFileBytes);
    while (this.#heldBytes + size > this.totalBytes && this.#idle.length > 0) {
      this.#heldBytes -= (this.#idle.pop() as SharedArrayBuffer).byteLength;
    }
    if (this.#heldBytes + size > this.totalBytes) return null;
    this.#heldBytes += size;
    this.#allocations++;
    return new SharedArrayBuffer(size);
  }
}

/** 32 MiB in all, 8 MiB per file: media files are typically a few MB. */
export const defaultMemoryBudget = () => new MemoryBudget(32 * 1024 * 1024, 8 * 1024 * 1024);
