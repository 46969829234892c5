/**
 * A bag as one zip, through src/output's zip writer: stored entries (recordings are
 * compressed already, and a repository checks the bytes, not a deflate stream), every name
 * flagged UTF-8, each entry's CRC-32 computed as its bytes pass and written after them in a
 * data descriptor, zip64 where a size or offset needs it. Every entry carries the bag's time,
 * so the same bag gives the same zip.
 */
import { ZipWriter } from '../output/codecs/zip-writer.ts';
import type { Storage } from '../storage/types.ts';
import { type BagFile, type BagSink, type Digests, hashedSource, noHash } from './sink.ts';

export async function openZipSink(
  storage: Storage,
  fileName: string,
  bagName: string,
  time: Date,
): Promise<BagSink> {
  const output = await storage.create(fileName, { sha256: noHash });
  const location = storage.describe(fileName);
  return new ZipSink(location, new ZipWriter(location, output, { time }), bagName);
}

class ZipSink implements BagSink {
  constructor(
    readonly location: string,
    private readonly zip: ZipWriter,
    private readonly bagName: string,
  ) {}

  async add(file: BagFile): Promise<Digests> {
    const source = hashedSource(file);
    try {
      await this.zip.add(`${this.bagName}/${file.path}`, {
        kind: 'stream',
        size: file.size,
        open: async () => source.chunks(),
      });
    } catch (error) {
      // A source that ended short or long says so in its own words, not as the writer's failure.
      throw source.failure() ?? error;
    }
    return source.digests();
  }

  async finish(): Promise<void> {
    await this.zip.finish();
  }

  abort(): Promise<void> {
    return this.zip.abort();
  }
}
