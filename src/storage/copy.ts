import type { Readable } from 'node:stream';
import type { Storage, StoredFile } from './types.ts';

/** Copies a stream into a new stored file, chunk by chunk with backpressure; a failure removes the partial file. */
export async function copyInto(
  source: Readable,
  storage: Pick<Storage, 'create'>,
  path: string,
): Promise<StoredFile> {
  const file = await storage.create(path);
  try {
    for await (const chunk of source) await file.write(chunk as Uint8Array);
    return await file.close();
  } catch (error) {
    await file.abort();
    throw error;
  }
}
