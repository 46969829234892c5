/**
 * SHA-256 and CRC-32 of media on a thread of their own. On the event loop, hashing every
 * body twice (its SHA-256 for the media table, then media.zip's SHA-256 for the manifest)
 * and its CRC-32 was about a third of the media step's CPU, and every socket chunk waited
 * behind it; here the bytes are copied into buffers that travel to the thread and back, so
 * the hashing runs on the second core while the event loop keeps downloading (bench/README.md).
 *
 * The caller's bytes are never handed over, only copied: a body stays usable while it is
 * hashed, and nothing the zip writer or a stream still reads is detached. At most
 * `maxInFlightBytes` are copied and not yet hashed; beyond that, `update` waits.
 *
 * The thread's code is a few lines of plain JavaScript evaluated as a worker: it runs the
 * same under tsx (the tests, the bench) and from the bundle the CLI runs.
 */
import { Worker } from 'node:worker_threads';
import { MediaError } from '../errors.ts';
import type { RunningSha256 } from '../storage/output-file.ts';

const workerSource = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const { crc32 } = require('node:zlib');
const streams = new Map();
parentPort.on('message', (message) => {
  const { op, id } = message;
  if (op === 'open') {
    streams.set(id, { hash: createHash('sha256'), crc: message.crc ? 0 : null });
  } else if (op === 'update') {
    const stream = streams.get(id);
    const bytes = new Uint8Array(message.buffer, 0, message.length);
    stream.hash.update(bytes);
    if (stream.crc !== null) stream.crc = crc32(bytes, stream.crc);
    parentPort.postMessage({ op: 'returned', buffer: message.buffer }, [message.buffer]);
  } else if (op === 'digest') {
    const stream = streams.get(id);
    streams.delete(id);
    parentPort.postMessage({ op: 'digest', id, sha256: stream.hash.digest('hex'), crc32: stream.crc });
  }
});
`;

/** Size of the buffers the bytes travel in; a larger update is sent in several. */
const transferBytes = 1024 * 1024;
const defaultMaxInFlightBytes = 16 * transferBytes;

export interface BodyDigest {
  sha256: string;
  crc32: number;
}

interface Pending {
  resolve(value: { sha256: string; crc32: number | null }): void;
  reject(error: Error): void;
}

export class HashingThread {
  #worker: Worker | null = null;
  #failure: Error | null = null;
  #closed = false;
  #nextId = 0;
  /** Digests asked for and not yet answered, by stream id. */
  readonly #digests = new Map<number, Pending>();
  /** Transfer buffers back from the thread, ready for more bytes. */
  readonly #spare: ArrayBuffer[] = [];
  #inFlightBytes = 0;
  /** Updates waiting for a buffer to come back. */
  readonly #waiting: (() => void)[] = [];

  constructor(private readonly maxInFlightBytes = defaultMaxInFlightBytes) {}

  /** SHA-256 and CRC-32 of one whole body (the media table's hash, the zip entry's CRC). */
  async digestBody(bytes: Uint8Array): Promise<BodyDigest> {
    const stream = this.#open(true);
    await stream.update(bytes);
    const { sha256, crc32 } = await stream.digest();
    return { sha256, crc32: crc32 ?? 0 };
  }

  /** A running SHA-256 of a file written in order (media.zip, for the manifest). */
  runningSha256(): RunningSha256 {
    const stream = this.#open(false);
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

  #open(crc: boolean) {
    const id = this.#nextId++;
    this.#post({ op: 'open', id, crc });
    return {
      update: (bytes: Uint8Array) => this.#update(id, bytes),
      digest: () =>
        new Promise<{ sha256: string; crc32: number | null }>((resolve, reject) => {
          this.#digests.set(id, { resolve, reject });
          this.#post({ op: 'digest', id });
        }),
    };
  }

  /** Copies `bytes` into transfer buffers and sends them; resolves once all are copied. */
  async #update(id: number, bytes: Uint8Array): Promise<void> {
    for (let offset = 0; offset < bytes.length; offset += transferBytes) {
      const slice = bytes.subarray(offset, offset + transferBytes);
      const buffer = await this.#transferBuffer();
      new Uint8Array(buffer).set(slice);
      this.#inFlightBytes += buffer.byteLength;
      this.#post({ op: 'update', id, buffer, length: slice.length }, [buffer]);
    }
  }

  async #transferBuffer(): Promise<ArrayBuffer> {
    while (this.#spare.length === 0 && this.#inFlightBytes + transferBytes > this.maxInFlightBytes) {
      this.#check();
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
    this.#check();
    return this.#spare.pop() ?? new ArrayBuffer(transferBytes);
  }

  #post(message: Record<string, unknown>, transfer: ArrayBuffer[] = []): void {
    this.#check();
    const worker = this.#start();
    worker.postMessage(message, transfer);
    // The thread keeps the process alive only while it owes an answer or holds bytes.
    worker.ref();
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(workerSource, { eval: true });
    worker.on('message', (message) => this.#receive(message));
    worker.on('error', (error) => this.#fail(new MediaError(`the hashing thread failed: ${error.message}`)));
    worker.on('exit', (code) => {
      if (!this.#closed) this.#fail(new MediaError(`the hashing thread stopped (exit code ${code})`));
    });
    this.#worker = worker;
    return worker;
  }

  #receive(message: {
    op: string;
    id?: number;
    buffer?: ArrayBuffer;
    sha256?: string;
    crc32?: number | null;
  }) {
    if (message.op === 'returned' && message.buffer) {
      this.#inFlightBytes -= message.buffer.byteLength;
      this.#spare.push(message.buffer);
      this.#waiting.shift()?.();
    } else if (message.op === 'digest' && message.id !== undefined) {
      const pending = this.#digests.get(message.id);
      this.#digests.delete(message.id);
      pending?.resolve({ sha256: message.sha256 ?? '', crc32: message.crc32 ?? null });
    }
    if (this.#digests.size === 0 && this.#inFlightBytes === 0) this.#worker?.unref();
  }

  #fail(error: Error): void {
    this.#failure ??= error;
    for (const pending of this.#digests.values()) pending.reject(this.#failure);
    this.#digests.clear();
    for (const wake of this.#waiting.splice(0)) wake();
  }

  #check(): void {
    if (this.#failure) throw this.#failure;
  }
}
