/**
 * A file written as ranges of another followed by some bytes, through `create`: the bytes pass
 * through this thread a mebibyte at a time (object storage, or no other thread to copy on).
 */
import type { RangeSource, RunningSha256, Storage, StoredFile } from './types.ts';

/** Ranges are read a mebibyte at a time: each chunk is a round trip through the event loop. */
const COPY_CHUNK_BYTES = 1024 * 1024;

export async function copyRangesThrough(
  to: Storage,
  path: string,
  source: RangeSource,
  tail: Uint8Array,
  sha256?: RunningSha256,
): Promise<StoredFile> {
  const output = await to.create(path, sha256 ? { sha256 } : {});
  try {
    for (const range of source.ranges)
      for await (const chunk of source.storage.readChunks(source.path, range, COPY_CHUNK_BYTES))
        await output.write(chunk);
    await output.write(tail);
    return await output.close();
  } catch (error) {
    await output.abort();
    throw error;
  }
}
