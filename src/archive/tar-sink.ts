/**
 * A bag as one tar (POSIX.1-2001 pax: src/output/codecs/tar-format.ts): each file's headers,
 * then its bytes, padded to 512; two zero blocks end it. Every header carries the same time, owner 0 and mode 0644, so the same bag
 * gives the same tar.
 */
import { TAR_BLOCK as BLOCK, tarHeaders } from '../output/codecs/tar-format.ts';
import type { OutputFile, Storage } from '../storage/types.ts';
import { type BagFile, type BagSink, copyHashed, type Digests, noHash } from './sink.ts';

export async function openTarSink(
  storage: Storage,
  fileName: string,
  bagName: string,
  time: Date,
): Promise<BagSink> {
  const output = await storage.create(fileName, { sha256: noHash });
  return new TarSink(storage.describe(fileName), output, bagName, Math.floor(time.getTime() / 1000));
}

class TarSink implements BagSink {
  constructor(
    readonly location: string,
    private readonly output: OutputFile,
    private readonly bagName: string,
    private readonly mtime: number,
  ) {}

  async add(file: BagFile): Promise<Digests> {
    const path = `${this.bagName}/${file.path}`;
    for (const block of tarHeaders(path, file.size, this.mtime)) await this.output.write(block);
    const digests = await copyHashed(file, (chunk) => this.output.write(chunk));
    const padding = (BLOCK - (file.size % BLOCK)) % BLOCK;
    if (padding > 0) await this.output.write(Buffer.alloc(padding));
    return digests;
  }

  async finish(): Promise<void> {
    await this.output.write(Buffer.alloc(2 * BLOCK));
    await this.output.close();
  }

  abort(): Promise<void> {
    return this.output.abort();
  }
}
