/**
 * One file written to S3-compatible object storage. The part being filled lives in a file in
 * a scratch folder, not in memory: a run writes to every table at once, so parts held in
 * memory would grow with the number of large files. A full part is uploaded from that file
 * (UploadPart of a multipart upload started with the first part) while the next one fills;
 * a file that never fills a part is one PutObject at close. Only the parts being sent are in
 * memory, at most PARTS_IN_FLIGHT for the whole process, and a writer only ever waits for
 * its own previous part, so no file waits on another one being written.
 */
import { randomUUID } from 'node:crypto';
import { type FileHandle, open, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  AbortMultipartUploadCommand,
  type CompletedPart,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { openScratch, type Scratch } from '../util/scratch.ts';
import type { ByteSink } from './output-file.ts';

/** The smallest part S3 accepts (but for the last). */
export const PART_BYTES = 5 * 1024 * 1024;
/** The most parts S3 takes in one upload. */
export const MAX_PARTS = 10_000;
/** Parts of one size before the next size, twice as large. */
const PARTS_PER_SIZE = 2_000;

/**
 * The size of part `partNumber` (from 1): PART_BYTES for the first 2,000 (objects under
 * 10,000 MiB, nearly all), then twice as large every 2,000 parts, so the 10,000 parts S3
 * allows hold 310,000 MiB (a media.zip of many large recordings) while a part, read into
 * memory to be sent, stays at most 80 MiB.
 */
export function partBytes(partNumber: number): number {
  return PART_BYTES * 2 ** Math.floor((partNumber - 1) / PARTS_PER_SIZE);
}
/** Parts read into memory and being sent, for all files together. */
const PARTS_IN_FLIGHT = 4;

/**
 * What the files written to one bucket share: the scratch folder for their parts (made when
 * the first file opens, removed when the last one is done) and the parts in flight.
 */
export class PartSpool {
  #scratch: Promise<Scratch> | null = null;
  #open = 0;
  #free = PARTS_IN_FLIGHT;
  #waiting: (() => void)[] = [];

  opened(): void {
    this.#open++;
  }

  async closed(): Promise<void> {
    this.#open--;
    if (this.#open > 0 || !this.#scratch) return;
    const scratch = this.#scratch;
    this.#scratch = null;
    await (await scratch).remove();
  }

  /** A new file name in the scratch folder. */
  async partFile(): Promise<string> {
    this.#scratch ??= openScratch();
    return join((await this.#scratch).dir, `part-${randomUUID()}`);
  }

  /** Runs `send` once fewer than PARTS_IN_FLIGHT others are running. */
  async inFlight<T>(send: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await send();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    }
  }
}

export interface ObjectTarget {
  client: S3Client;
  bucket: string;
  key: string;
  spool: PartSpool;
  /** Turns a failure into the error reported for this object. */
  fail: (error: unknown) => Error;
}

export class S3Output implements ByteSink {
  #handle: FileHandle | null = null;
  #partPath: string | null = null;
  #partBytes = 0;
  /** The number of the part being filled. */
  #partNumber = 1;
  /** Part files not yet sent and removed. */
  #files = new Set<string>();
  #uploadId: Promise<string> | null = null;
  #parts: CompletedPart[] = [];
  /** The previous part's upload; rejects when it failed. */
  #sending: Promise<void> = Promise.resolve();
  #done = false;

  constructor(private readonly target: ObjectTarget) {
    target.spool.opened();
  }

  /** Resolves once `bytes` are in the part file: the caller may reuse them. */
  async write(bytes: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < bytes.byteLength) {
      const handle = await this.#part();
      const size = partBytes(this.#partNumber);
      const length = Math.min(size - this.#partBytes, bytes.byteLength - offset);
      await writeAll(handle, bytes.subarray(offset, offset + length)).catch((error: unknown) => {
        // A write's error names no file: this one (in the scratch folder) is where the disk filled.
        if (error instanceof Error && !(error as NodeJS.ErrnoException).path) {
          Object.assign(error, { path: this.#partPath });
        }
        throw error;
      });
      this.#partBytes += length;
      offset += length;
      if (this.#partBytes === size) await this.#send();
    }
  }

  async end(): Promise<void> {
    const { client, bucket, key } = this.target;
    try {
      if (this.#uploadId === null) {
        const body = await this.#takeSmallFile();
        await this.target.spool.inFlight(() =>
          client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body })),
        );
      } else {
        if (this.#partBytes > 0) await this.#send();
        await this.#sending;
        const UploadId = await this.#uploadId;
        await client.send(
          new CompleteMultipartUploadCommand({
            Bucket: bucket,
            Key: key,
            UploadId,
            MultipartUpload: { Parts: this.#parts },
          }),
        );
      }
    } catch (error) {
      await this.#abortUpload();
      throw this.target.fail(error);
    } finally {
      await this.#release();
    }
  }

  /** Aborts the upload (its parts are removed) and removes the object should it be complete. */
  async destroy(): Promise<void> {
    if (this.#done) return;
    await this.#sending.catch(() => {});
    await this.#abortUpload();
    await this.target.client
      .send(new DeleteObjectCommand({ Bucket: this.target.bucket, Key: this.target.key }))
      .catch(() => {});
    await this.#release();
  }

  /** The part file being filled, opened with the part's first bytes. */
  async #part(): Promise<FileHandle> {
    if (this.#handle) return this.#handle;
    if (this.#done) throw new Error('the upload was stopped');
    if (this.#partNumber > MAX_PARTS) {
      throw new Error(`the object outgrows the ${MAX_PARTS} parts of a multipart upload (310,000 MiB)`);
    }
    const path = await this.target.spool.partFile();
    this.#files.add(path);
    this.#handle = await open(path, 'w');
    this.#partPath = path;
    return this.#handle;
  }

  /** Closes the full part's file and sends it once this file's previous part is in. */
  async #send(): Promise<void> {
    const path = this.#partPath as string;
    await this.#handle?.close();
    this.#handle = null;
    this.#partPath = null;
    this.#partBytes = 0;
    await this.#sending;
    this.#uploadId ??= this.#startUpload();
    const partNumber = this.#partNumber++;
    this.#sending = this.#sendPart(path, partNumber);
    // Awaited by the next part or by end; a failure must not go unhandled meanwhile.
    this.#sending.catch(() => {});
  }

  async #startUpload(): Promise<string> {
    const { client, bucket, key } = this.target;
    const started = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
    if (!started.UploadId) throw new Error('the storage started a multipart upload without an id');
    return started.UploadId;
  }

  async #sendPart(path: string, PartNumber: number): Promise<void> {
    const { client, bucket, key, spool } = this.target;
    const UploadId = await (this.#uploadId as Promise<string>);
    const sent = await spool.inFlight(async () =>
      client.send(
        new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber, Body: await readFile(path) }),
      ),
    );
    this.#parts.push({ ETag: sent.ETag, PartNumber });
    await this.#removeFile(path);
  }

  /** A file smaller than a part: its bytes (read back from its part file) for one PutObject. */
  async #takeSmallFile(): Promise<Buffer> {
    const path = this.#partPath;
    if (!this.#handle || !path) return Buffer.alloc(0);
    await this.#handle.close();
    this.#handle = null;
    return readFile(path);
  }

  async #abortUpload(): Promise<void> {
    if (this.#uploadId === null) return;
    const UploadId = await this.#uploadId.catch(() => null);
    if (!UploadId) return;
    await this.target.client
      .send(new AbortMultipartUploadCommand({ Bucket: this.target.bucket, Key: this.target.key, UploadId }))
      .catch(() => {});
  }

  async #removeFile(path: string): Promise<void> {
    this.#files.delete(path);
    await rm(path, { force: true });
  }

  /** Removes this file's part files, once; the spool's folder goes with the last file. */
  async #release(): Promise<void> {
    if (this.#done) return;
    this.#done = true;
    await this.#handle?.close().catch(() => {});
    this.#handle = null;
    await Promise.all([...this.#files].map((path) => this.#removeFile(path)));
    await this.target.spool.closed();
  }
}

async function writeAll(handle: FileHandle, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.byteLength) {
    const { bytesWritten } = await handle.write(bytes, written, bytes.byteLength - written);
    written += bytesWritten;
  }
}
