/**
 * media.zip without the erased responses' recordings, as a copy: the central directory is read
 * in two or three ranged reads (output/codecs/zip-index.ts), every kept entry's bytes (its local
 * header, data and data descriptor, which name no offset) are copied as they lie, a stretch of
 * adjacent kept entries in one ranged read, and the kept entries' central records are copied
 * with their new offsets. Nothing is inflated, deflated or parsed beyond the directory, so the
 * cost is that of copying the file and hashing it, which the hashing thread does in one pass
 * (Storage.copyRanges), leaving the event loop to the run's tables. A zip that holds no erased
 * recording is left as it is.
 */

import type { HashingThread } from '../media/hashing-thread.ts';
import { nameOf } from '../names.ts';
import { endRecords } from '../output/codecs/zip-format.ts';
import { type CentralRecord, readCentralDirectory, recordAtOffset } from '../output/codecs/zip-index.ts';
import type { ByteRange, Storage } from '../storage/types.ts';

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
  /** The thread that copies and hashes the kept entries; without it, this thread. */
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
  const stretches: ByteRange[] = [];
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
  const stored = await to.copyRanges(path, { storage: from, path, ranges: stretches }, tail, hashing);
  return { entries: central.length, bytes: stored.bytes, removed };
}
