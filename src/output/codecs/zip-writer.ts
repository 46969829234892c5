/**
 * The zip writer: media.zip, a REFI-QDA project, a share package, a bag. Finished bodies (in memory or in temporary files)
 * are appended one at a time as stored entries (media is already compressed), of any size:
 * an entry of 4 GiB or more gets zip64 sizes, and the archive may outgrow 4 GiB and 65 535
 * entries (zip64 offsets and end records).
 *
 * The writer is a few plain writes per entry (zip-format.ts) rather than a
 * stream library: a body in memory is its header and one write, its CRC-32 computed in one
 * native call (zlib.crc32); a temporary file is copied through one reused buffer, and a
 * stream of known size (a recording read out of another zip) chunk by chunk, each with its
 * CRC-32 following it in a data descriptor. The bytes go to the run's storage as they are
 * written (a local file, or a multipart upload: the zip never sits whole anywhere). Any
 * storage error once an entry has begun aborts the archive and removes the partial zip: a
 * truncated media.zip is never left behind.
 */
import { type FileHandle, open } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { MediaError } from '../../errors.ts';
import type { RunningSha256, Storage } from '../../storage/types.ts';
import {
  centralHeader,
  dataDescriptor,
  dosDateTime,
  endRecords,
  localHeader,
  needsZip64,
  type ZipEntryRecord,
} from './zip-format.ts';

/** Bytes read as they are written (an entry of another zip): `size` of them, in order. */
export interface StreamBody {
  kind: 'stream';
  size: number;
  open: () => Promise<AsyncIterable<Uint8Array> | Iterable<Uint8Array>>;
  crc32?: number;
}

/** Bytes in memory, or in a (temporary) file; the CRC-32 where the caller computed it already. */
export type StoredBody = ({ kind: 'memory'; data: Buffer } | { kind: 'file'; path: string }) & {
  crc32?: number;
};

/** What an entry of the zip is written from. */
export type ZipBody = StoredBody | StreamBody;

export interface MediaArchive {
  /** Appends a finished body as `entryName`; resolves once the entry is in the zip. */
  add(entryName: string, body: ZipBody): Promise<void>;
  /** Writes the central directory; bytes is the size of the zip file. */
  finish(): Promise<{ entries: number; bytes: number }>;
  /** Stops writing and removes the partial zip. */
  abort(): Promise<void>;
}

/** Where the zip's bytes go, in order. */
export interface ZipOutput {
  /** Resolves once `chunk` is taken and may be reused. */
  write(chunk: Uint8Array): Promise<void>;
  close(): Promise<unknown>;
  /** Stops and removes what was written. */
  abort(): Promise<void>;
}

export interface ArchiveOptions {
  /** Computes the zip's SHA-256 (for the manifest) elsewhere (media.zip's: on the hashing thread). */
  hashing?: { runningSha256(): RunningSha256 };
  /**
   * Writes every zip64 field (entry sizes, offsets, end records) whatever the sizes: lets
   * tests check that readers accept them without writing 4 GiB.
   */
  forceZip64?: boolean;
  /**
   * The time every entry carries (its UTC fields, as the zip's zone-less ones), so the same
   * files give the same zip on every machine; without it, each entry's own writing time.
   */
  time?: Date;
}

/** Chunk size of temporary-file reads and of central directory writes. */
const ioChunkBytes = 1024 * 1024;

/** Creates `path` in `storage` (a run's media.zip). */
export async function openMediaArchive(
  storage: Storage,
  path: string,
  options: ArchiveOptions = {},
): Promise<MediaArchive> {
  const output = await storage.create(
    path,
    options.hashing ? { sha256: options.hashing.runningSha256() } : {},
  );
  return new ZipWriter(storage.describe(path), output, options);
}

export class ZipWriter implements MediaArchive {
  private readonly records: ZipEntryRecord[] = [];
  /** Bytes written so far: the offset of the next record. */
  private offset = 0;
  /** Every operation runs after the previous one: one writer, records in order. */
  private queue: Promise<unknown> = Promise.resolve();
  private failure: Error | null = null;
  private state: 'open' | 'finishing' | 'finished' | 'aborted' = 'open';
  private outputEnded = false;
  private readBuffer: Buffer | null = null;
  private readonly fixedTime: { dosTime: number; dosDate: number } | null;

  constructor(
    /** The zip as errors name it (a path or URL). */
    private readonly where: string,
    private readonly output: ZipOutput,
    private readonly options: ArchiveOptions = {},
  ) {
    const time = options.time;
    this.fixedTime = time
      ? dosDateTime(
          new Date(
            time.getUTCFullYear(),
            time.getUTCMonth(),
            time.getUTCDate(),
            time.getUTCHours(),
            time.getUTCMinutes(),
            time.getUTCSeconds(),
          ),
        )
      : null;
  }

  add(entryName: string, body: ZipBody): Promise<void> {
    return this.run(() => this.addNow(entryName, body));
  }

  finish(): Promise<{ entries: number; bytes: number }> {
    return this.run(async () => {
      this.checkOpen();
      this.state = 'finishing';
      await this.guarded(() => this.writeEnd());
      this.state = 'finished';
      return { entries: this.records.length, bytes: this.offset };
    });
  }

  async abort(): Promise<void> {
    if (this.state === 'finished' || this.state === 'aborted') return;
    this.failure ??= new MediaError('media.zip was aborted', { context: { file: this.where } });
    this.state = 'aborted';
    // The operation under way stops at its next write; then nothing else touches the output.
    await this.queue;
    await this.endOutput('abort');
  }

  private run<T>(operation: () => Promise<T>): Promise<T> {
    const result = this.queue.then(operation);
    this.queue = result.catch(() => {});
    return result;
  }

  private async addNow(entryName: string, body: ZipBody): Promise<void> {
    this.checkOpen();
    if (body.kind === 'memory') {
      const record = this.record(entryName, body.data.length, body.crc32 ?? crc32(body.data), false);
      await this.guarded(async () => {
        await this.emit(localHeader(record));
        await this.emit(body.data);
      });
      this.records.push(record);
      return;
    }
    if (body.kind === 'stream') {
      const record = this.record(entryName, body.size, 0, true);
      await this.guarded(() => this.copyStream(body.open, record, body.crc32));
      this.records.push(record);
      return;
    }
    const file = await open(body.path, 'r').catch((error: unknown) => {
      throw this.skipped(entryName, error);
    });
    try {
      const { size } = await file.stat();
      this.checkOpen(); // again: the archive may have been aborted meanwhile
      const record = this.record(entryName, size, 0, true);
      await this.guarded(() => this.copyFile(file, record, body.crc32));
      this.records.push(record);
    } finally {
      await file.close().catch(() => {});
    }
  }

  /**
   * Header, the file's bytes through one reused buffer (CRC-32 on the way, unless the
   * download computed it), data descriptor.
   */
  private async copyFile(file: FileHandle, record: ZipEntryRecord, knownCrc?: number): Promise<void> {
    await this.emit(localHeader(record));
    this.readBuffer ??= Buffer.allocUnsafeSlow(ioChunkBytes);
    const buffer = this.readBuffer;
    let crc = 0;
    let copied = 0;
    for (;;) {
      const { bytesRead } = await file.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      const chunk = buffer.subarray(0, bytesRead);
      if (knownCrc === undefined) crc = crc32(chunk, crc);
      copied += bytesRead;
      await this.emit(chunk);
    }
    if (copied !== record.size) {
      throw new Error(
        `${record.name.toString('utf8')} changed size while archived (${copied} of ${record.size} bytes)`,
      );
    }
    record.crc32 = knownCrc ?? crc;
    await this.emit(dataDescriptor(record));
  }

  /** Header, the stream's bytes as they come (CRC-32 on the way, unless known), data descriptor. */
  private async copyStream(
    openStream: StreamBody['open'],
    record: ZipEntryRecord,
    knownCrc?: number,
  ): Promise<void> {
    await this.emit(localHeader(record));
    let crc = 0;
    let copied = 0;
    for await (const chunk of await openStream()) {
      if (knownCrc === undefined) crc = crc32(chunk, crc);
      copied += chunk.length;
      if (copied > record.size) break;
      await this.emit(chunk);
    }
    if (copied !== record.size) {
      throw new Error(
        `${record.name.toString('utf8')} was ${copied > record.size ? 'longer' : 'shorter'} than its ${record.size} bytes`,
      );
    }
    record.crc32 = knownCrc ?? crc;
    await this.emit(dataDescriptor(record));
  }

  /** The central directory in chunks of about ioChunkBytes, then the end records. */
  private async writeEnd(): Promise<void> {
    const start = this.offset;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    for (const record of this.records) {
      const header = centralHeader(record, this.options.forceZip64);
      pending.push(header);
      pendingBytes += header.length;
      if (pendingBytes >= ioChunkBytes) {
        await this.emit(Buffer.concat(pending));
        pending = [];
        pendingBytes = 0;
      }
    }
    if (pendingBytes > 0) await this.emit(Buffer.concat(pending));
    await this.emit(endRecords(this.records.length, start, this.offset - start, this.options.forceZip64));
    await this.endOutput('close');
  }

  private record(entryName: string, size: number, crc: number, descriptor: boolean): ZipEntryRecord {
    return {
      name: Buffer.from(entryName, 'utf8'),
      crc32: crc,
      size,
      offset: this.offset,
      ...(this.fixedTime ?? dosDateTime(new Date())),
      dataDescriptor: descriptor,
      zip64: this.options.forceZip64 === true || needsZip64(size),
    };
  }

  private async emit(chunk: Uint8Array): Promise<void> {
    this.checkOpen();
    await this.output.write(chunk);
    this.offset += chunk.length;
  }

  /**
   * Runs writes that leave the zip inconsistent if they stop half way: any failure (disk,
   * source file, abort) ends the whole archive and removes it.
   */
  private async guarded(writes: () => Promise<void>): Promise<void> {
    try {
      await writes();
    } catch (error) {
      this.failure ??= this.wrap('could not be written', error);
      this.state = 'aborted';
      await this.endOutput('abort');
      throw this.failure;
    }
  }

  private async endOutput(how: 'close' | 'abort'): Promise<void> {
    if (this.outputEnded) return;
    this.outputEnded = true;
    await (how === 'close' ? this.output.close() : this.output.abort());
  }

  private checkOpen(): void {
    if (this.failure) throw this.failure;
    if (this.state !== 'open' && this.state !== 'finishing')
      throw new MediaError('media.zip is already finished', { context: { file: this.where } });
  }

  private skipped(entryName: string, error: unknown): MediaError {
    const reason = error instanceof Error ? error.message : String(error);
    return new MediaError(`media.zip skipped ${entryName}: ${reason}`, {
      context: { file: this.where },
      cause: error,
    });
  }

  private wrap(what: string, error: unknown): MediaError {
    const reason = error instanceof Error ? error.message : String(error);
    return new MediaError(`media.zip ${what}: ${reason}`, { context: { file: this.where }, cause: error });
  }
}
