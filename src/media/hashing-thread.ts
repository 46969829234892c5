/**
 * SHA-256 and CRC-32 of media on a thread of their own. Every body is hashed twice (its
 * SHA-256 for the media table, then media.zip's SHA-256 for the manifest) and CRC'd; on the
 * event loop every socket chunk would wait behind that. Here the hashing runs on another
 * core while the event loop keeps downloading (bench/README.md has the measurements).
 *
 * The caller's bytes are never handed over. Bytes in shared memory (a body in the media
 * memory budget, src/media/memory-budget.ts) are read by the thread where they lie: `update`
 * resolves once the thread has hashed them, and the caller only reads them meanwhile (the zip
 * writer, a stream). Other bytes are copied: each hash fills a 1 MiB buffer that travels to
 * the thread and back (a message per megabyte, not per write); at most `maxInFlightBytes` of
 * buffers are sent and not yet back, beyond that `update` waits.
 *
 * It also copies: erase's media.zip without some entries is the old zip's kept stretches and a
 * new directory, which the thread reads, hashes and writes in one pass (`copyRanges`).
 *
 * The thread's code is a few lines of plain JavaScript evaluated as a worker: it runs the
 * same under tsx (the tests, the bench) and from the bundle the CLI runs.
 */
import { Worker } from 'node:worker_threads';
import { MediaError } from '../errors.ts';
import type { ByteRange, RangeCopier, RunningSha256 } from '../storage/types.ts';

const workerSource = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const { crc32 } = require('node:zlib');
const { openSync, readSync, writeSync, closeSync } = require('node:fs');
const streams = new Map();
const readBuffer = Buffer.allocUnsafe(1024 * 1024);
function update(stream, bytes) {
  stream.hash.update(bytes);
  if (stream.crc !== null) stream.crc = crc32(bytes, stream.crc);
}
function writeAll(fd, bytes) {
  for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
}
function copyRanges(stream, path, ranges, tail, to) {
  const input = openSync(path, 'r');
  let output = null;
  let bytes = 0;
  try {
    output = openSync(to, 'w');
    for (const [start, end] of ranges) {
      for (let at = start; at < end; ) {
        const read = readSync(input, readBuffer, 0, Math.min(readBuffer.length, end - at), at);
        if (read === 0) throw new Error(path + ' ends at ' + at + ', before ' + end);
        const chunk = readBuffer.subarray(0, read);
        update(stream, chunk);
        writeAll(output, chunk);
        at += read;
        bytes += read;
      }
    }
    update(stream, tail);
    writeAll(output, tail);
    return bytes + tail.length;
  } finally {
    closeSync(input);
    if (output !== null) closeSync(output);
  }
}
function updateFromFile(stream, path) {
  const fd = openSync(path, 'r');
  try {
    for (;;) {
      const read = readSync(fd, readBuffer, 0, readBuffer.length, null);
      if (read === 0) break;
      update(stream, readBuffer.subarray(0, read));
    }
  } finally {
    closeSync(fd);
  }
}
parentPort.on('message', ({ id, open, buffer, shared, offset, length, file, ranges, tail, copyTo, digest }) => {
  if (open) streams.set(id, { hash: createHash('sha256'), crc: open.crc ? 0 : null });
  const stream = streams.get(id);
  const reply = { id };
  const transfer = [];
  if (buffer) {
    update(stream, new Uint8Array(buffer, 0, length));
    reply.buffer = buffer;
    transfer.push(buffer);
  }
  if (shared) {
    update(stream, new Uint8Array(shared, offset, length));
    reply.released = true;
  }
  if (file) {
    try {
      if (copyTo) reply.bytes = copyRanges(stream, file, ranges, tail, copyTo);
      else updateFromFile(stream, file);
    } catch (error) {
      streams.delete(id);
      parentPort.postMessage({ id, error: error.message, code: error.code, copying: Boolean(copyTo) });
      return;
    }
  }
  if (digest) {
    streams.delete(id);
    reply.sha256 = stream.hash.digest('hex');
    reply.crc32 = stream.crc;
  }
  parentPort.postMessage(reply, transfer);
});
`;

/** Size of the buffers the bytes travel in: each stream fills one, then sends it. */
const transferBytes = 1024 * 1024;
/** Shared bytes shorter than this are copied like any others: a message costs more than the copy. */
const minSharedBytes = 64 * 1024;
const defaultMaxInFlightBytes = 16 * transferBytes;

export interface BodyDigest {
  sha256: string;
  crc32: number;
}

interface Digest {
  sha256: string;
  crc32: number | null;
  bytes?: number;
}

/** One message to the thread: a stream's next buffer of bytes, its opening, its end. */
interface Batch {
  id: number;
  open?: { crc: boolean };
  buffer?: ArrayBuffer;
  /** Bytes the thread reads in place: `length` of them from `offset`. */
  shared?: SharedArrayBuffer;
  offset?: number;
  length?: number;
  /** A local file the thread reads and hashes itself. */
  file?: string;
  /** With `copyTo`: these ranges of the file ([start, end), in order), then `tail`, written to `copyTo` as they are hashed. */
  ranges?: [number, number][];
  tail?: Uint8Array;
  copyTo?: string;
  digest?: true;
}

interface Reply {
  id: number;
  buffer?: ArrayBuffer;
  /** The batch's shared bytes are hashed: the caller may reuse them. */
  released?: true;
  sha256?: string;
  crc32?: number | null;
  /** Why the thread could not read (or write) a file, and the system's code for it. */
  error?: string;
  code?: string;
  /** Whether the error came while copying (copyTo). */
  copying?: boolean;
  /** Bytes the thread wrote (copyTo). */
  bytes?: number;
}

interface Pending<T> {
  resolve(value: T): void;
  reject(error: Error): void;
}

export class HashingThread implements RangeCopier {
  #worker: Worker | null = null;
  #failure: Error | null = null;
  #closed = false;
  #nextId = 0;
  /** Digests asked for and not yet answered, by stream id. */
  readonly #digests = new Map<number, Pending<Digest>>();
  /** Shared bytes sent and not yet hashed, by stream id, oldest first. */
  readonly #reading = new Map<number, Pending<void>[]>();
  /** Transfer buffers back from the thread, ready for more bytes. */
  readonly #spare: ArrayBuffer[] = [];
  /** Buffers sent and not yet back. */
  #sentBytes = 0;
  /** Streams waiting for a buffer to come back. */
  readonly #waiting: (() => void)[] = [];

  constructor(private readonly maxInFlightBytes = defaultMaxInFlightBytes) {}

  /**
   * Starts the thread now rather than on the first bytes: a worker takes a while to come up,
   * which the first downloads can hide.
   */
  warmUp(): void {
    if (!this.#closed && !this.#failure) this.#start();
  }

  /** SHA-256 and CRC-32 of one whole body (the media table's hash, the zip entry's CRC). */
  async digestBody(bytes: Uint8Array): Promise<BodyDigest> {
    const stream = new ThreadStream(this, this.#nextId++, true);
    await stream.update(bytes);
    const { sha256, crc32 } = await stream.digest();
    return { sha256, crc32: crc32 ?? 0 };
  }

  /**
   * SHA-256 and CRC-32 of a finished local file (a body streamed to a temporary file), read
   * by the thread itself: no byte of it crosses to the event loop.
   */
  async digestFile(path: string): Promise<BodyDigest> {
    const { sha256, crc32 } = await this.ask({ id: this.#nextId++, open: { crc: true }, file: path });
    return { sha256, crc32: crc32 ?? 0 };
  }

  /**
   * Writes `to` as ranges of the local file `path` followed by `tail`, hashing as it copies,
   * on the thread: a large copy (erase's media.zip) that leaves the event loop to other files.
   */
  async copyRanges(
    path: string,
    ranges: readonly ByteRange[],
    tail: Uint8Array,
    to: string,
  ): Promise<{ bytes: number; sha256: string }> {
    const digest = await this.ask({
      id: this.#nextId++,
      open: { crc: false },
      file: path,
      ranges: ranges.map((range): [number, number] => [range.start, range.end]),
      tail,
      copyTo: to,
    });
    return { bytes: digest.bytes ?? 0, sha256: digest.sha256 };
  }

  /** A running SHA-256 of a file written in order (media.zip, for the manifest). */
  runningSha256(): RunningSha256 {
    const stream = new ThreadStream(this, this.#nextId++, false);
    return { update: (bytes) => stream.update(bytes), digest: async () => (await stream.digest()).sha256 };
  }

  /** Stops the thread; anything still asked for fails. */
  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    this.#worker = null;
    this.#fail(new MediaError('the hashing thread was closed'));
    if (worker) await worker.terminate();
  }

  /** A buffer to copy bytes into: a spare one, or a new one unless too many are out. */
  async takeBuffer(): Promise<ArrayBuffer> {
    while (this.#spare.length === 0 && this.#sentBytes + transferBytes > this.maxInFlightBytes) {
      this.#check();
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
    this.#check();
    return this.#spare.pop() ?? new ArrayBuffer(transferBytes);
  }

  /** Sends a batch that needs no answer. */
  send(batch: Batch): void {
    this.#check();
    const worker = this.#start();
    if (batch.buffer) this.#sentBytes += batch.buffer.byteLength;
    worker.postMessage(batch, batch.buffer ? [batch.buffer] : []);
    // The thread keeps the process alive only while it owes an answer or holds bytes.
    worker.ref();
  }

  /** Sends a batch of shared bytes; resolves once the thread has hashed them. */
  readShared(batch: Batch): Promise<void> {
    this.#check();
    const released = new Promise<void>((resolve, reject) => {
      const queue = this.#reading.get(batch.id) ?? [];
      queue.push({ resolve, reject });
      this.#reading.set(batch.id, queue);
    });
    this.send(batch);
    return released;
  }

  /** Sends a stream's last batch; resolves with its digest. */
  ask(batch: Batch): Promise<Digest> {
    this.#check();
    const answer = new Promise<Digest>((resolve, reject) => this.#digests.set(batch.id, { resolve, reject }));
    this.send({ ...batch, digest: true });
    return answer;
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(workerSource, { eval: true });
    worker.on('message', (reply: Reply) => this.#receive(reply));
    worker.on('error', (error) => this.#fail(new MediaError(`the hashing thread failed: ${error.message}`)));
    worker.on('exit', (code) => {
      if (!this.#closed) this.#fail(new MediaError(`the hashing thread stopped (exit code ${code})`));
    });
    // Idle until asked: only what it owes keeps the process alive (send refs it).
    worker.unref();
    this.#worker = worker;
    return worker;
  }

  #receive(reply: Reply): void {
    if (reply.buffer) {
      this.#sentBytes -= reply.buffer.byteLength;
      this.#spare.push(reply.buffer);
      this.#waiting.shift()?.();
    }
    if (reply.released) this.#released(reply.id);
    const pending = this.#digests.get(reply.id);
    if (pending && reply.error !== undefined) {
      this.#digests.delete(reply.id);
      const error = new MediaError(
        `the hashing thread could not ${reply.copying ? 'copy' : 'read'} a file: ${reply.error}`,
      );
      pending.reject(reply.code === undefined ? error : Object.assign(error, { code: reply.code }));
    } else if (pending && reply.sha256 !== undefined) {
      this.#digests.delete(reply.id);
      pending.resolve({
        sha256: reply.sha256,
        crc32: reply.crc32 ?? null,
        ...(reply.bytes === undefined ? {} : { bytes: reply.bytes }),
      });
    }
    if (this.#digests.size === 0 && this.#reading.size === 0 && this.#sentBytes === 0) this.#worker?.unref();
  }

  #released(id: number): void {
    const queue = this.#reading.get(id);
    queue?.shift()?.resolve();
    if (queue?.length === 0) this.#reading.delete(id);
  }

  #fail(error: Error): void {
    this.#failure ??= error;
    for (const pending of this.#digests.values()) pending.reject(this.#failure);
    this.#digests.clear();
    for (const queue of this.#reading.values()) for (const pending of queue) pending.reject(this.#failure);
    this.#reading.clear();
    for (const wake of this.#waiting.splice(0)) wake();
  }

  #check(): void {
    if (this.#failure) throw this.#failure;
  }
}

/**
 * One hash on the thread: bytes are copied into a transfer buffer, sent when it is full (or
 * at the digest), so a small write (a zip header) costs a copy, not a message. Large shared
 * bytes go as they are, after what was gathered before them.
 */
class ThreadStream {
  #buffer: ArrayBuffer | null = null;
  #used = 0;
  #opened = false;

  constructor(
    private readonly thread: HashingThread,
    private readonly id: number,
    private readonly crc: boolean,
  ) {}

  /** Resolves once `bytes` are copied or hashed: the caller may reuse them. */
  async update(bytes: Uint8Array): Promise<void> {
    if (bytes.buffer instanceof SharedArrayBuffer && bytes.length >= minSharedBytes) {
      if (this.#buffer) this.thread.send(this.#nextBatch());
      const batch = {
        ...this.#nextBatch(),
        shared: bytes.buffer,
        offset: bytes.byteOffset,
        length: bytes.length,
      };
      return this.thread.readShared(batch);
    }
    for (let offset = 0; offset < bytes.length; ) {
      this.#buffer ??= await this.thread.takeBuffer();
      const length = Math.min(bytes.length - offset, transferBytes - this.#used);
      new Uint8Array(this.#buffer, this.#used, length).set(bytes.subarray(offset, offset + length));
      this.#used += length;
      offset += length;
      if (this.#used === transferBytes) this.thread.send(this.#nextBatch());
    }
  }

  digest(): Promise<Digest> {
    return this.thread.ask(this.#nextBatch());
  }

  /** The bytes gathered so far, and the stream's opening if it is the first batch. */
  #nextBatch(): Batch {
    const batch: Batch = { id: this.id };
    if (!this.#opened) batch.open = { crc: this.crc };
    if (this.#buffer) {
      batch.buffer = this.#buffer;
      batch.length = this.#used;
    }
    this.#opened = true;
    this.#buffer = null;
    this.#used = 0;
    return batch;
  }
}
