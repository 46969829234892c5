/**
 * media.zip without the erased responses' recordings. Every other entry's bytes (its local
 * header, data and data descriptor, which name no offset) are copied as they are, in one pass
 * over the zip, as fast as a copy of the file; then a new central directory gives each kept
 * entry its new offset, in the records the run's own zip writer uses (src/media/zip-format.ts,
 * zip64 where sizes or offsets need it). A zip that holds no erased recording is left as it is.
 */
import type yauzl from 'yauzl';
import { nameOf } from '../names.ts';
import { centralHeader, endRecords, type ZipEntryRecord } from '../output/codecs/zip-format.ts';
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

interface Span {
  entry: yauzl.Entry;
  start: number;
  end: number;
  kept: boolean;
}

/** The zip's entries in the order their bytes lie, each with its span, and where the directory starts. */
async function spansOf(from: Storage, path: string, bytes: number, folders: ReadonlySet<string>) {
  const zip = await openStoredZip(from, path, bytes);
  // Where yauzl starts reading entries: the central directory (the end records' offset).
  const directory = (zip as unknown as { readEntryCursor: number }).readEntryCursor;
  const entries: yauzl.Entry[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('entry', (entry: yauzl.Entry) => {
        entries.push(entry);
        zip.readEntry();
      });
      zip.on('end', () => resolve());
      zip.on('error', reject);
      zip.readEntry();
    });
  } finally {
    zip.close();
  }
  entries.sort((a, b) => a.relativeOffsetOfLocalHeader - b.relativeOffsetOfLocalHeader);
  const spans: Span[] = entries.map((entry, index) => ({
    entry,
    start: entry.relativeOffsetOfLocalHeader,
    end: entries[index + 1]?.relativeOffsetOfLocalHeader ?? directory,
    kept: !ofErased(entry.fileName, folders),
  }));
  return { spans, directory };
}

/** The entry's central record at its new offset: sizes in zip64 fields where its local header has them. */
function recordOf(entry: yauzl.Entry, offset: number): ZipEntryRecord {
  const zip64 = entry.extraFields.some((field) => field.id === 0x0001 && field.data.length >= 16);
  return {
    name: Buffer.from(entry.fileName, 'utf8'),
    crc32: entry.crc32,
    size: entry.uncompressedSize,
    offset,
    dosTime: entry.lastModFileTime,
    dosDate: entry.lastModFileDate,
    dataDescriptor: (entry.generalPurposeBitFlag & 0x8) !== 0,
    zip64,
  };
}

/** Writes `path` of `to` without the recordings of `ids`; null when it holds none of them. */
export async function rewriteMediaZip(
  from: Storage,
  to: Storage,
  path: string,
  bytes: number,
  ids: ReadonlySet<string>,
): Promise<ZipKept | null> {
  const folders = new Set([...ids].map((id) => nameOf(id)));
  const { spans, directory } = await spansOf(from, path, bytes, folders);
  const removed = spans.filter((span) => !span.kept).length;
  if (removed === 0) return null;
  // Each kept entry's new offset: the kept bytes before it.
  const kept: ZipEntryRecord[] = [];
  let offset = 0;
  for (const span of spans) {
    if (!span.kept) continue;
    kept.push(recordOf(span.entry, offset));
    offset += span.end - span.start;
  }
  const output = await to.create(path);
  try {
    let at = 0;
    let next = 0;
    for await (const chunk of await from.readStream(path, { start: 0, end: directory })) {
      const buffer = chunk as Buffer;
      const chunkEnd = at + buffer.length;
      // The kept spans' parts that lie in this chunk, in order.
      while (next < spans.length) {
        const span = spans[next] as Span;
        const start = Math.max(span.start, at);
        const end = Math.min(span.end, chunkEnd);
        if (span.kept && end > start) await output.write(buffer.subarray(start - at, end - at));
        if (span.end > chunkEnd) break;
        next += 1;
      }
      at = chunkEnd;
    }
    const central = Buffer.concat(kept.map((record) => centralHeader(record)));
    await output.write(central);
    await output.write(endRecords(kept.length, offset, central.length));
    const stored = await output.close();
    return { entries: kept.length, bytes: stored.bytes, removed };
  } catch (error) {
    await output.abort();
    throw error;
  }
}
