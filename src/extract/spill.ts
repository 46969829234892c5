/**
 * A temporary JSON-lines file: lets a stage see a whole study (to deduplicate) while keeping
 * only an index in memory. Values are added one at a time and written in pieces; a caller
 * waits for the stream to drain once a batch (a page).
 */
import { once } from 'node:events';
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** About how many characters of lines go to the stream in one write. */
const pieceChars = 256 * 1024;

export class SpillFile {
  /** Lines added and not yet handed to the stream. */
  private piece = '';

  private constructor(
    private readonly dir: string,
    readonly path: string,
    private readonly stream: WriteStream,
  ) {}

  static async create(parent = tmpdir()): Promise<SpillFile> {
    const dir = await mkdtemp(join(parent, 'study-export-spill-'));
    const path = join(dir, 'spill.jsonl');
    const stream = createWriteStream(path);
    await once(stream, 'open');
    return new SpillFile(dir, path, stream);
  }

  /**
   * Appends one line. Lines are gathered and handed to the stream in pieces, so a caller can
   * let each value go as soon as it is added, and no page's text is ever one string.
   */
  add(value: unknown): void {
    this.piece += `${JSON.stringify(value)}\n`;
    if (this.piece.length >= pieceChars) this.flush();
  }

  /** Hands what was added to the stream and waits until it can take more (once a page). */
  async drained(): Promise<void> {
    this.flush();
    if (this.stream.writableNeedDrain) await once(this.stream, 'drain');
  }

  async finish(): Promise<void> {
    if (this.stream.writableFinished) return;
    this.flush();
    this.stream.end();
    await once(this.stream, 'finish');
  }

  /** The lines in the order written (call after finish). */
  async *read(): AsyncGenerator<unknown> {
    const input = createReadStream(this.path);
    const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
    try {
      for await (const line of lines) yield JSON.parse(line);
    } finally {
      lines.close();
      input.destroy();
    }
  }

  private flush(): void {
    if (this.piece === '') return;
    this.stream.write(this.piece);
    this.piece = '';
  }

  async remove(): Promise<void> {
    this.stream.destroy();
    await rm(this.dir, { recursive: true, force: true });
  }
}
