/**
 * A local file written through a stream with backpressure: each write waits for the stream
 * to drain when its buffer is full, so memory stays flat however many rows arrive.
 */
import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import { RunError } from '../errors.ts';
import { type ByteSink, HashedOutputFile } from './output-file.ts';

class LocalByteSink implements ByteSink {
  #failure: unknown = null;

  constructor(
    private readonly absolutePath: string,
    private readonly stream: WriteStream,
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

  async end(): Promise<void> {
    if (this.#failure !== null) throw this.#failure;
    this.stream.end();
    await finished(this.stream);
  }

  async destroy(): Promise<void> {
    this.stream.destroy();
    await rm(this.absolutePath, { force: true });
  }
}

/**
 * Creates (or truncates) `absolutePath`, named `path` in the stored file; a missing folder or
 * a permission problem fails here.
 */
export async function openLocalFile(absolutePath: string, path = absolutePath): Promise<HashedOutputFile> {
  const stream = createWriteStream(absolutePath, { flags: 'w' });
  try {
    await once(stream, 'open');
  } catch (cause) {
    throw new RunError(`could not write ${absolutePath}: ${(cause as Error).message}`, {
      context: { file: absolutePath },
      cause,
    });
  }
  return new HashedOutputFile(path, absolutePath, new LocalByteSink(absolutePath, stream));
}
