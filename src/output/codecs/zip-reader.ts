/**
 * The zip reader: a zip in the storage (a folder or s3://) read by byte ranges as yauzl asks for
 * them, or one held in memory, walked entry by entry with every entry's size checked
 * (docs/development.md says why yauzl). The walk is the one loop over a zip's entries: verify's
 * check of media.zip and of a bag, xlsx's check of a workbook, the privacy scan, qdpx's verify.
 */
import { PassThrough, type Readable } from 'node:stream';
import yauzl from 'yauzl';
import type { Storage } from '../../storage/types.ts';

/** Receives one file entry's bytes, as they stream out of the zip. */
export type ZipEntryVisit = (name: string, bytes: Readable) => Promise<void>;

/**
 * Every entry of a zip in the storage, in its central directory's order, one at a time: `visit`
 * takes each file's bytes (folders are counted, not visited), and whatever it leaves unread is
 * read to its end, so every entry's size and CRC-32 are checked. Resolves with the number of
 * entries, folders included; rejects on the first entry that cannot be read.
 */
export async function walkStoredZip(
  storage: Storage,
  path: string,
  bytes: number,
  visit: ZipEntryVisit,
): Promise<number> {
  return walk(await openStoredZip(storage, path, bytes), visit);
}

/** A zip in the storage, read by ranges as yauzl asks for them (sizes checked). */
function openStoredZip(storage: Storage, path: string, bytes: number): Promise<yauzl.ZipFile> {
  return new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.fromRandomAccessReader(
      new StoredFileReader(storage, path),
      bytes,
      { lazyEntries: true, validateEntrySizes: true },
      (error, opened) => (error ? reject(error) : resolve(opened)),
    ),
  );
}

/** The entries of a zip held in memory whose names `wanted` accepts, each read whole. */
export async function bufferedZipEntries(
  bytes: Buffer,
  wanted: (name: string) => boolean,
): Promise<{ name: string; data: Buffer }[]> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.fromBuffer(bytes, { lazyEntries: true, validateEntrySizes: true }, (error, opened) =>
      error ? reject(error) : resolve(opened),
    ),
  );
  const entries: { name: string; data: Buffer }[] = [];
  const visit: ZipEntryVisit = async (name, stream) => {
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    entries.push({ name, data: Buffer.concat(chunks) });
  };
  await walk(zip, visit, wanted);
  return entries;
}

/** The names of a zip's entries, each read to its end (its size checked). */
export async function zipEntryNames(storage: Storage, path: string, bytes: number): Promise<string[]> {
  const names: string[] = [];
  await walkStoredZip(storage, path, bytes, async (name) => {
    names.push(name);
  });
  return names;
}

/**
 * The one walk: entry after entry, each file's stream handed to `visit` and then read to its
 * end. An entry `wanted` refuses is passed over unread (a zip in memory has nothing to fetch).
 */
async function walk(zip: yauzl.ZipFile, visit: ZipEntryVisit, wanted?: (name: string) => boolean) {
  let entries = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', () => resolve());
      zip.on('entry', (entry: yauzl.Entry) => {
        entries += 1;
        if (entry.fileName.endsWith('/') || (wanted && !wanted(entry.fileName))) return zip.readEntry();
        zip.openReadStream(entry, (error, stream) => {
          if (error) return reject(error);
          visit(entry.fileName, stream)
            .then(() => readToEnd(stream))
            .then(() => zip.readEntry(), reject);
        });
      });
      zip.readEntry();
    });
  } finally {
    zip.close();
  }
  return entries;
}

/** Reads what a visit left of an entry, so the entry's checks run at its end. */
async function readToEnd(stream: Readable): Promise<void> {
  if (stream.readableEnded) return;
  for await (const _ of stream);
}

/** A stored file read by ranges through the storage, as yauzl asks for them. */
class StoredFileReader extends yauzl.RandomAccessReader {
  constructor(
    private readonly storage: Storage,
    private readonly path: string,
  ) {
    super();
  }

  override _readStreamForRange(start: number, end: number): Readable {
    const output = new PassThrough();
    this.storage.readStream(this.path, { start, end }).then(
      (input) => input.on('error', (error) => output.destroy(error)).pipe(output),
      (error: Error) => output.destroy(error),
    );
    return output;
  }
}
