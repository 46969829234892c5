/**
 * What every output file does whatever it is written to: gathers small writes into larger
 * chunks, counts the bytes and computes the sha256 as they pass (the manifest never reads a
 * file back), keeps the first failure and names the file in it.
 */
import { createHash } from 'node:crypto';
import { RunError } from '../errors.ts';
import { allSettled } from '../util/concurrency.ts';
import { describeSystemError, isSystemError } from '../util/system-errors.ts';
import { ByteBatch } from './byte-batch.ts';
import type { OutputFile, RunningSha256, StoredFile } from './types.ts';

/** Where the bytes go: a file stream or a multipart upload. */
export interface ByteSink {
  /** Resolves when the sink can take more (it may keep `bytes` until then). */
  write(bytes: Uint8Array): Promise<void>;
  /** Several chunks in order, in one system call where the sink can (a zip header and its body). */
  writeMany?(chunks: Uint8Array[]): Promise<void>;
  /** Every byte is stored and the file is complete under its name. */
  end(): Promise<void>;
  /** Stops and removes what was written. */
  destroy(): Promise<void>;
}

function sha256OnThisThread(): RunningSha256 {
  const hash = createHash('sha256');
  return {
    update: (bytes) => {
      hash.update(bytes);
    },
    digest: () => hash.digest('hex'),
  };
}

export class HashedOutputFile implements OutputFile {
  readonly path: string;
  #where: string;
  #sink: ByteSink;
  #sha256: RunningSha256;
  #bytes = 0;
  #batch = new ByteBatch();
  #failure: Error | null = null;
  #state: 'open' | 'closed' | 'aborted' = 'open';

  /** `where` names the file in errors: a path or an s3:// URL. */
  constructor(path: string, where: string, sink: ByteSink, sha256: RunningSha256 = sha256OnThisThread()) {
    this.path = path;
    this.#where = where;
    this.#sink = sink;
    this.#sha256 = sha256;
  }

  get bytes(): number {
    return this.#bytes;
  }

  async write(chunk: string | Uint8Array): Promise<void> {
    this.#check();
    this.#bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
    const ready = this.#batch.add(chunk);
    if (ready.length > 0) await this.#send(ready);
  }

  async close(): Promise<StoredFile> {
    this.#check();
    const rest = this.#batch.take();
    if (rest) await this.#send([rest]);
    await this.#pass(() => this.#sink.end());
    let sha256 = '';
    await this.#pass(async () => {
      sha256 = await this.#sha256.digest();
    });
    this.#state = 'closed';
    return { path: this.path, bytes: this.#bytes, sha256 };
  }

  async abort(): Promise<void> {
    if (this.#state !== 'open') return;
    this.#state = 'aborted';
    this.#batch.take();
    await this.#sink.destroy();
  }

  /**
   * Hashed as gathered, not per write: one hash call per batch, and no string encoded twice.
   * Chunks ready together go to the sink in one call where it can take several. The hash and
   * the sink read the same bytes side by side (a hash on another thread may take a while).
   */
  async #send(chunks: Uint8Array[]): Promise<void> {
    await allSettled([this.#hash(chunks), this.#store(chunks)]);
  }

  async #hash(chunks: Uint8Array[]): Promise<void> {
    for (const bytes of chunks) {
      const hashing = this.#sha256.update(bytes);
      if (hashing) await this.#pass(() => hashing);
    }
  }

  async #store(chunks: Uint8Array[]): Promise<void> {
    const sink = this.#sink;
    const writeMany = chunks.length > 1 ? sink.writeMany?.bind(sink) : undefined;
    if (writeMany) await this.#pass(() => writeMany(chunks));
    else for (const bytes of chunks) await this.#pass(() => sink.write(bytes));
  }

  #check(): void {
    if (this.#failure) throw this.#failure;
    if (this.#state !== 'open') throw new RunError(`${this.#where} is already ${this.#state}`);
  }

  async #pass(step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (cause) {
      this.#failure ??= isSystemError(cause)
        ? (describeSystemError(cause, { path: this.#where }) as Error)
        : new RunError(`could not write ${this.#where}: ${reason(cause)}`, {
            context: { file: this.#where },
            cause,
          });
      throw this.#failure;
    }
  }
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
