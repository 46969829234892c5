/**
 * A local file written through a stream with backpressure: each write waits for the stream
 * to drain when its buffer is full, so memory stays flat however many rows arrive.
 */
import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { finished } from 'node:stream/promises';
import { RunError } from '../errors.ts';
import { makeDirectory } from '../util/fs.ts';
import { describeSystemError, isSystemError } from '../util/system-errors.ts';
import { hiddenPathFor } from './local-temporaries.ts';
import { type ByteSink, HashedOutputFile } from './output-file.ts';
import type { CreateOptions } from './types.ts';

class LocalByteSink implements ByteSink {
  #failure: unknown = null;

  constructor(
    /** Where the bytes are written. */
    private readonly absolutePath: string,
    private readonly stream: WriteStream,
    /** Where they are renamed to once complete; null when written in place. */
    private readonly finalPath: string | null,
  ) {
    // Keep the first error; it is reported by the next write or by end.
    stream.on('error', (error) => {
      this.#failure ??= error;
    });
  }

  async write(bytes: Uint8Array): Promise<void> {
    if (this.#failure !== null) throw this.#failure;
    if (!this.stream.write(bytes)) await once(this.stream, 'drain');
  }

  /** Corked, so that the stream hands them to one writev. */
  async writeMany(chunks: Uint8Array[]): Promise<void> {
    if (this.#failure !== null) throw this.#failure;
    this.stream.cork();
    let ready = true;
    for (const chunk of chunks) ready = this.stream.write(chunk);
    this.stream.uncork();
    if (!ready) await once(this.stream, 'drain');
  }

  async end(): Promise<void> {
    if (this.#failure !== null) throw this.#failure;
    this.stream.end();
    await finished(this.stream);
    if (this.finalPath !== null) await rename(this.absolutePath, this.finalPath);
  }

  async destroy(): Promise<void> {
    this.stream.destroy();
    await rm(this.absolutePath, { force: true });
  }
}

/**
 * Creates (or truncates) `absolutePath`, named `path` in the stored file; a permission problem
 * fails here. With `hidden`, the bytes go to a hidden name beside it, renamed into place on
 * close: nothing is visible under the name before it is complete. With `makeFolder`, a missing
 * folder is made, after the file is tried: the folder is there for every file but the first,
 * and making it first would cost a mkdir and a stat each time.
 */
export async function openLocalFile(
  absolutePath: string,
  path = absolutePath,
  options: { hidden?: boolean; makeFolder?: boolean } & CreateOptions = {},
): Promise<HashedOutputFile> {
  const target = options.hidden ? hiddenPathFor(absolutePath) : absolutePath;
  let stream: WriteStream;
  try {
    stream = await openStream(target).catch(async (cause: unknown) => {
      if (!options.makeFolder || (cause as NodeJS.ErrnoException).code !== 'ENOENT') throw cause;
      await makeDirectory(dirname(absolutePath));
      return openStream(target);
    });
  } catch (cause) {
    // Too many open files, a full disk, permission: said in plain words with the path.
    // The file's own name, not the hidden one it is written under.
    if (isSystemError(cause)) throw describeSystemError(Object.assign(cause, { path: absolutePath }));
    throw new RunError(`could not write ${absolutePath}: ${(cause as Error).message}`, {
      context: { file: absolutePath },
      cause,
    });
  }
  const sink = new LocalByteSink(target, stream, options.hidden ? absolutePath : null);
  return new HashedOutputFile(path, absolutePath, sink, options.sha256);
}

async function openStream(target: string): Promise<WriteStream> {
  const stream = createWriteStream(target, { flags: 'w' });
  await once(stream, 'open');
  return stream;
}
