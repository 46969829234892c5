/**
 * A temporary JSON-lines file: lets a stage see a whole study (to deduplicate) while keeping
 * only an index in memory. Writes wait for the stream to drain.
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
   * Appends one line per value, waiting for the stream once (a page at a time, not a line at
   * a time). The lines go to the stream in pieces, so a page's text is never one string.
   */
  async appendAll(values: readonly unknown[]): Promise<void> {
    let text = '';
    for (const value of values) {
      text += `${JSON.stringify(value)}\n`;
      if (text.length >= pieceChars) {
        this.stream.write(text);
        text = '';
      }
    }
    if (text !== '') this.stream.write(text);
    if (this.stream.writableNeedDrain) await once(this.stream, 'drain');
  }

  async finish(): Promise<void> {
    if (this.stream.writableFinished) return;
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

  async remove(): Promise<void> {
    this.stream.destroy();
    await rm(this.dir, { recursive: true, force: true });
  }
}
