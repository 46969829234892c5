/**
 * A study's listing, kept so that a stage can see the whole study (to deduplicate) while
 * holding only an index: in memory while it is small, else in a temporary JSON-lines file.
 * A small listing is cheaper to keep than to write out as JSON and parse back. Past
 * `memoryBytes` (the values' size as received) every value goes to the file, those held
 * first, so a large study's listing is never whole in memory; lines keep the order added.
 */
import { once } from 'node:events';
import { createReadStream, createWriteStream, mkdtempSync, type WriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** About how many characters of lines go to the stream in one write. */
const pieceChars = 256 * 1024;
/** Listings up to this size as received stay in memory. */
export const defaultSpillMemoryBytes = 1024 * 1024;

interface SpillFile {
  dir: string;
  path: string;
  stream: WriteStream;
}

export class Spill {
  /** Values added while the listing fits in memory; null once it went to the file. */
  private held: unknown[] | null = [];
  private heldBytes = 0;
  private file: SpillFile | null = null;
  /** Lines added and not yet handed to the stream. */
  private piece = '';
  private failure: Error | null = null;

  constructor(
    private readonly parent = tmpdir(),
    private readonly memoryBytes = defaultSpillMemoryBytes,
  ) {}

  /**
   * Appends one value, `bytes` long as received (unknown: it goes to the file). In a file, lines are gathered and handed to
   * the stream in pieces, so a caller can let each value go as soon as it is added, and no
   * page's text is ever one string.
   */
  add(value: unknown, bytes: number | undefined): void {
    if (this.held && bytes !== undefined && this.heldBytes + bytes <= this.memoryBytes) {
      this.held.push(value);
      this.heldBytes += bytes;
      return;
    }
    if (this.held) this.moveToFile();
    this.piece += `${JSON.stringify(value)}\n`;
    if (this.piece.length >= pieceChars) this.flush();
  }

  /** Hands what was added to the stream and waits until it can take more (once a page). */
  async drained(): Promise<void> {
    this.check();
    if (!this.file) return;
    this.flush();
    if (this.file.stream.writableNeedDrain) await once(this.file.stream, 'drain');
  }

  async finish(): Promise<void> {
    this.check();
    if (!this.file || this.file.stream.writableFinished) return;
    this.flush();
    this.file.stream.end();
    await once(this.file.stream, 'finish');
  }

  /** The values in the order added (call after finish); held ones are let go as they are read. */
  async *read(): AsyncGenerator<unknown> {
    this.check();
    const held = this.held;
    if (held) {
      for (let i = 0; i < held.length; i++) {
        const value = held[i];
        held[i] = undefined;
        yield value;
      }
      return;
    }
    const input = createReadStream((this.file as SpillFile).path);
    const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
    try {
      for await (const line of lines) yield JSON.parse(line);
    } finally {
      lines.close();
      input.destroy();
    }
  }

  async remove(): Promise<void> {
    this.held = [];
    if (!this.file) return;
    this.file.stream.destroy();
    await rm(this.file.dir, { recursive: true, force: true });
  }

  /** Opens the file and writes the held values into it first: from here every value goes there. */
  private moveToFile(): void {
    const dir = mkdtempSync(join(this.parent, 'study-export-spill-'));
    const path = join(dir, 'spill.jsonl');
    const stream = createWriteStream(path);
    // Opening and writing go on in the background: a failure is kept and thrown by the next call.
    stream.on('error', (error) => {
      this.failure ??= error;
    });
    this.file = { dir, path, stream };
    for (const value of this.held ?? []) this.piece += `${JSON.stringify(value)}\n`;
    this.held = null;
    this.flush();
  }

  private flush(): void {
    if (this.piece === '' || !this.file) return;
    this.file.stream.write(this.piece);
    this.piece = '';
  }

  private check(): void {
    if (this.failure) throw this.failure;
  }
}
