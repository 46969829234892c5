/**
 * Bytes of downloaded media that may be held in memory at once, across all downloads and
 * the files waiting for the zip writer. Taking never waits: a download that does not fit
 * goes to a temporary file instead, so the budget bounds memory without slowing anything.
 */
export class MemoryBudget {
  #free: number;

  constructor(
    readonly totalBytes: number,
    /** Largest single file kept in memory; larger ones always go to a temporary file. */
    readonly maxFileBytes: number,
  ) {
    this.#free = totalBytes;
  }

  /** Reserves `bytes` if the file qualifies and they are free; true when reserved. */
  tryTake(bytes: number): boolean {
    if (bytes > this.maxFileBytes || bytes > this.#free) return false;
    this.#free -= bytes;
    return true;
  }

  give(bytes: number): void {
    this.#free = Math.min(this.totalBytes, this.#free + bytes);
  }

  get freeBytes(): number {
    return this.#free;
  }
}

/** 32 MiB in all, 8 MiB per file: media files are typically a few MB. */
export const defaultMemoryBudget = () => new MemoryBudget(32 * 1024 * 1024, 8 * 1024 * 1024);
