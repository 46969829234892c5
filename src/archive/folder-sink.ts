/**
 * A bag as a folder. On a file system it is written under a hidden name beside its own and
 * renamed into place once whole, so a folder of the bag's name is always a whole bag; in a
 * bucket the files go under the bag's prefix, and the tag files, written last, say it is done.
 */
import { rename } from 'node:fs/promises';
import { isObjectStorage } from '../storage/index.ts';
import type { Storage } from '../storage/types.ts';
import { type BagFile, type BagSink, copyHashed, type Digests, noHash } from './sink.ts';

export async function openFolderSink(storage: Storage, bagName: string): Promise<BagSink> {
  const local = !isObjectStorage(storage.location);
  const working = local ? `.${bagName}.partial` : bagName;
  if (local) await storage.deleteAll(working);
  const files = storage.at(working);
  return {
    location: storage.describe(bagName),
    async add(file: BagFile): Promise<Digests> {
      const output = await files.create(file.path, { sha256: noHash });
      try {
        const digests = await copyHashed(file, (chunk) => output.write(chunk));
        await output.close();
        return digests;
      } catch (error) {
        await output.abort();
        throw error;
      }
    },
    async finish() {
      if (local) await rename(storage.describe(working), storage.describe(bagName));
    },
    abort: () => storage.deleteAll(working),
  };
}
