/**
 * media.zip without the erased responses' recordings, as a copy: the central directory is read
 * in two or three ranged reads (output/codecs/zip-index.ts), every kept entry's bytes (its local
 * header, data and data descriptor, which name no offset) are copied as they lie, a stretch of
 * adjacent kept entries in one ranged read, and the kept entries' central records are copied
 * with their new offsets. Nothing is inflated, deflated or parsed beyond the directory, so the
 * cost is that of copying the file. A zip that holds no erased recording is left as it is.
 */

import type { HashingThread } from '../media/hashing-thread.ts';
import { nameOf } from '../names.ts';
import { endRecords } from '../output/codecs/zip-format.ts';
import { type CentralRecord, readCentralDirectory, recordAtOffset } from '../output/codecs/zip-index.ts';
import { isObjectStorage } from '../storage/index.ts';
import type { CreateOptions, Storage } from '../storage/types.ts';

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

/** Kept entries are copied a mebibyte at a time: 64 KiB chunks spent more in round trips than in copying. */
const copyChunkBytes = 1024 * 1024;

interface Span {
  record: CentralRecord;
  start: number;
  end: number;
  kept: boolean;
}

/** Writes `path` of `to` without the recordings of `ids`; null when it holds none of them. */
export async function rewriteMediaZip(
  from: Storage,
  to: Storage,
  path: string,
  bytes: number,
  ids: ReadonlySet<string>,
  /** Where the new zip's SHA-256 is computed; without it as it is written, on this thread. */
  hashing?: HashingThread,
): Promise<ZipKept | null> {
  const folders = new Set([...ids].map((id) => nameOf(id)));
  const directory = await readCentralDirectory(from, path, bytes);
  // The entries in the order their bytes lie, each up to the next one (or the directory).
  const records = [...directory.records].sort(
    (a, b) => a.entry.localHeaderOffset - b.entry.localHeaderOffset,
  );
  const spans: Span[] = records.map((record, index) => ({
    record,
    start: record.entry.localHeaderOffset,
    end: records[index + 1]?.entry.localHeaderOffset ?? directory.offset,
    kept: !ofErased(record.entry.name, folders),
  }));
  const removed = spans.filter((span) => !span.kept).length;
  if (removed === 0) return null;
  const central: Buffer[] = [];
  const stretches: { start: number; end: number }[] = [];
  let offset = 0;
  for (const span of spans) {
    if (!span.kept) continue;
    const record = directory.bytes.subarray(span.record.start, span.record.end);
    central.push(recordAtOffset(record, offset));
    offset += span.end - span.start;
    const last = stretches.at(-1);
    if (last && last.end === span.start) last.end = span.end;
    else stretches.push({ start: span.start, end: span.end });
  }
  const centralBytes = Buffer.concat(central);
  const tail = Buffer.concat([centralBytes, endRecords(central.length, offset, centralBytes.length)]);
  const output = await to.create(path, sha256Of(from, path, stretches, tail, hashing));
  try {
    for (const stretch of stretches)
      for await (const chunk of from.readChunks(path, stretch, copyChunkBytes)) await output.write(chunk);
    await output.write(tail);
    const stored = await output.close();
    return { entries: central.length, bytes: stored.bytes, removed };
  } catch (error) {
    await output.abort();
    throw error;
  }
}

/**
 * Where the new zip's SHA-256 comes from: from a local zip, the hashing thread reads the kept
 * stretches itself while this thread copies them (the bytes never cross to it, and this
 * thread does nothing but copy); from a bucket it hashes the bytes as they are written.
 */
function sha256Of(
  from: Storage,
  path: string,
  stretches: readonly { start: number; end: number }[],
  tail: Uint8Array,
  hashing: HashingThread | undefined,
): CreateOptions {
  if (!hashing) return {};
  if (isObjectStorage(from.location)) return { sha256: hashing.runningSha256() };
  const digest = hashing.digestOfRanges(from.describe(path), stretches, tail);
  // Settled here too: a write that fails first leaves the digest unasked for.
  digest.catch(() => {});
  return { sha256: { update: () => {}, digest: () => digest } };
}
