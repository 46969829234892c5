/**
 * media.zip without the erased responses' recordings: every other entry copied, as stored,
 * through the run's own zip writer (src/media/archive.ts), so the new zip has the same form
 * as one a run writes (zip64 where sizes need it).
 */
import type { Readable } from 'node:stream';
import type yauzl from 'yauzl';
import { openMediaArchive } from '../media/archive.ts';
import { nameOf } from '../names.ts';
import { openStoredZip } from '../output/codecs/zip-reader.ts';
import type { Storage } from '../storage/types.ts';

export interface ZipKept {
  entries: number;
  bytes: number;
  /** Entries of erased responses left out (recordings, HLS segments and playlists). */
  removed: number;
}

/** Whether an entry (`<link_id>/<response_id>/…`) is a recording of one of `ids`. */
export function ofErased(entryName: string, folders: ReadonlySet<string>): boolean {
  return folders.has(entryName.split('/')[1] ?? '');
}

export async function rewriteMediaZip(
  from: Storage,
  to: Storage,
  path: string,
  bytes: number,
  ids: ReadonlySet<string>,
): Promise<ZipKept> {
  const folders = new Set([...ids].map((id) => nameOf(id)));
  const zip = await openStoredZip(from, path, bytes);
  const archive = await openMediaArchive(to, path);
  let removed = 0;
  try {
    for (let entry = await nextEntry(zip); entry !== null; entry = await nextEntry(zip)) {
      const current = entry;
      if (current.fileName.endsWith('/')) continue;
      if (ofErased(current.fileName, folders)) {
        removed += 1;
        continue;
      }
      await archive.add(current.fileName, {
        kind: 'stream',
        size: current.uncompressedSize,
        crc32: current.crc32,
        open: () => openEntry(zip, current),
      });
    }
    const written = await archive.finish();
    return { ...written, removed };
  } catch (error) {
    await archive.abort();
    throw error;
  } finally {
    zip.close();
  }
}

function nextEntry(zip: yauzl.ZipFile): Promise<yauzl.Entry | null> {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      zip.off('entry', onEntry);
      zip.off('end', onEnd);
      zip.off('error', onError);
    };
    const onEntry = (entry: yauzl.Entry) => {
      cleanup();
      resolve(entry);
    };
    const onEnd = () => {
      cleanup();
      resolve(null);
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    zip.on('entry', onEntry);
    zip.on('end', onEnd);
    zip.on('error', onError);
    zip.readEntry();
  });
}

function openEntry(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<Readable> {
  return new Promise((resolve, reject) =>
    zip.openReadStream(entry, (error, stream) => (error ? reject(error) : resolve(stream))),
  );
}
