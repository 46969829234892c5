/**
 * media.zip, written by a single writer (archiver 8's ZipArchive). Finished bodies (in
 * memory or in temporary files) are appended one at a time, stored (media is already
 * compressed), each under 4 GiB so no entry needs zip64. Any archiver or disk error aborts the archive and removes the partial
 * zip: a truncated media.zip is never left behind.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { ZipArchive } from 'archiver';
import './native-crc32.ts';
import { MediaError } from '../errors.ts';
import type { MediaBody } from './types.ts';

export interface MediaArchive {
  /** Appends a finished body as `entryName`; resolves once the entry is in the zip. */
  add(entryName: string, body: MediaBody): Promise<void>;
  /** Writes the central directory; bytes is the size of the zip file. */
  finish(): Promise<{ entries: number; bytes: number }>;
  /** Stops writing and removes the partial zip. */
  abort(): Promise<void>;
}

/** Entries this large would need zip64 sizes; refused instead. */
export const maxEntryBytes = 0xffff_ffff;

/**
 * Chunk size of the temp-file reads and the zip writes. archiver's own file() reads in
 * 64 KiB chunks and the default write stream buffers 16 KiB; per-chunk work (stream
 * hops, CRC calls, syscalls) was most of the writer's time on ~1 MB media files.
 */
const ioChunkBytes = 1024 * 1024;

interface PendingEntry {
  resolve: () => void;
  reject: (error: Error) => void;
}

export async function openMediaArchive(zipPath: string): Promise<MediaArchive> {
  const output = createWriteStream(zipPath, { highWaterMark: ioChunkBytes });
  await new Promise<void>((resolve, reject) => {
    output.once('open', () => resolve());
    output.once('error', reject);
  });
  return new ZipWriter(zipPath, output);
}

class ZipWriter implements MediaArchive {
  private readonly zip = new ZipArchive({ store: true });
  private readonly closed: Promise<void>;
  /** Adds run one after another: the next starts when the previous entry is written. */
  private queue: Promise<void> = Promise.resolve();
  private pending: PendingEntry | null = null;
  private failure: Error | null = null;
  private state: 'open' | 'finishing' | 'finished' | 'aborted' = 'open';
  private entries = 0;

  constructor(
    private readonly zipPath: string,
    private readonly output: ReturnType<typeof createWriteStream>,
  ) {
    this.closed = new Promise((resolve) => output.once('close', () => resolve()));
    this.zip.on('entry', () => this.settle(null));
    // Warnings are per entry (a file that could not be read): that entry fails, not the zip.
    this.zip.on('warning', (error) => this.settle(this.wrap('skipped an entry', error)));
    this.zip.on('error', (error) => void this.fail(error));
    output.on('error', (error) => void this.fail(error));
    this.zip.pipe(output);
  }

  add(entryName: string, body: MediaBody): Promise<void> {
    const added = this.queue.then(() => this.addNow(entryName, body));
    this.queue = added.catch(() => {});
    return added;
  }

  async finish(): Promise<{ entries: number; bytes: number }> {
    await this.queue;
    this.checkOpen();
    this.state = 'finishing';
    try {
      await Promise.all([this.zip.finalize(), this.closed]);
    } catch (error) {
      await this.fail(error);
    }
    if (this.failure) throw this.failure;
    this.state = 'finished';
    return { entries: this.entries, bytes: this.zip.pointer() };
  }

  async abort(): Promise<void> {
    if (this.state === 'finished' || this.state === 'aborted') return;
    this.failure ??= new MediaError('media.zip was aborted', { context: { file: this.zipPath } });
    await this.shutDown();
  }

  private async addNow(entryName: string, body: MediaBody): Promise<void> {
    this.checkOpen();
    if (body.kind === 'memory') {
      this.checkSize(entryName, body.data.length);
      // A buffer is one write, its CRC computed in one call.
      await this.append((zip) => zip.append(body.data, { name: entryName }));
    } else {
      const stats = await stat(body.path);
      this.checkSize(entryName, stats.size);
      this.checkOpen(); // again: the archive may have failed or been aborted during stat
      // A read shorter than the buffer is copied into a smaller one: size the buffer to the file.
      const highWaterMark = Math.max(1, Math.min(ioChunkBytes, stats.size));
      const source = createReadStream(body.path, { highWaterMark });
      // Listened to at once: archiver attaches its own listener only when the entry starts.
      // A read error fails the archive.
      source.once('error', (error) => void this.fail(error));
      await this.append((zip) => zip.append(source, { name: entryName, stats }));
    }
    this.entries++;
  }

  private checkSize(entryName: string, bytes: number): void {
    if (bytes >= maxEntryBytes) {
      throw new MediaError(`${entryName} is ${bytes} bytes; entries of 4 GiB or more are not archived`, {
        context: { file: entryName },
      });
    }
  }

  /** Starts one entry (stored: the archive is opened with store: true); resolves once it is written. */
  private append(start: (zip: ZipArchive) => void): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending = { resolve, reject };
      start(this.zip);
    });
  }

  private checkOpen(): void {
    if (this.failure) throw this.failure;
    if (this.state !== 'open')
      throw new MediaError('media.zip is already finished', { context: { file: this.zipPath } });
  }

  private settle(error: Error | null): void {
    const pending = this.pending;
    this.pending = null;
    if (!pending) return;
    if (error) pending.reject(error);
    else pending.resolve();
  }

  private wrap(what: string, error: unknown): MediaError {
    const reason = error instanceof Error ? error.message : String(error);
    return new MediaError(`media.zip ${what}: ${reason}`, { context: { file: this.zipPath }, cause: error });
  }

  /** An archiver or disk error: the whole archive is lost, so abort and remove it. */
  private async fail(error: unknown): Promise<void> {
    if (this.state === 'aborted') {
      this.settle(this.failure);
      return;
    }
    this.failure ??= this.wrap('could not be written', error);
    await this.shutDown();
  }

  private async shutDown(): Promise<void> {
    this.state = 'aborted';
    this.settle(this.failure);
    this.zip.abort();
    this.zip.unpipe(this.output);
    this.output.destroy();
    await this.closed;
    await rm(this.zipPath, { force: true });
  }
}
