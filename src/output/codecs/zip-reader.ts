/**
 * The zip reader: a zip in the storage (a folder or s3://) read by byte ranges as yauzl asks for
 * them, every entry's size checked (docs/development.md says why yauzl).
 */
import { PassThrough, type Readable } from 'node:stream';
import yauzl from 'yauzl';
import type { Storage } from '../../storage/types.ts';

/** A zip in the storage, read by ranges as yauzl asks for them (sizes checked). */
export function openStoredZip(run: Storage, path: string, bytes: number): Promise<yauzl.ZipFile> {
  return new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.fromRandomAccessReader(
      new StoredFileReader(run, path),
      bytes,
      { lazyEntries: true, validateEntrySizes: true },
      (error, opened) => (error ? reject(error) : resolve(opened)),
    ),
  );
}

/** A stored file read by ranges through the storage, as yauzl asks for them. */
class StoredFileReader extends yauzl.RandomAccessReader {
  constructor(
    private readonly run: Storage,
    private readonly path: string,
  ) {
    super();
  }

  override _readStreamForRange(start: number, end: number): Readable {
    const output = new PassThrough();
    this.run.readStream(this.path, { start, end }).then(
      (input) => input.on('error', (error) => output.destroy(error)).pipe(output),
      (error: Error) => output.destroy(error),
    );
    return output;
  }
}

/** The names of a zip's entries, each read to its end (yauzl checks their sizes). */
export async function zipEntryNames(run: Storage, path: string, bytes: number): Promise<string[]> {
  const zip = await openStoredZip(run, path, bytes);
  const names: string[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', () => resolve());
      zip.on('entry', (entry: yauzl.Entry) => {
        names.push(entry.fileName);
        zip.openReadStream(entry, (error, stream) => {
          if (error) return reject(error);
          stream.on('error', reject);
          stream.on('end', () => zip.readEntry());
          stream.resume();
        });
      });
      zip.readEntry();
    });
  } finally {
    zip.close();
  }
  return names;
}

/** The entries of a zip held in memory whose names `wanted` accepts, each read whole. */
export function bufferedZipEntries(
  bytes: Buffer,
  wanted: (name: string) => boolean,
): Promise<{ name: string; data: Buffer }[]> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(bytes, { lazyEntries: true, validateEntrySizes: true }, (error, zip) => {
      if (error) return reject(error);
      const entries: { name: string; data: Buffer }[] = [];
      zip.on('error', reject);
      zip.on('end', () => resolve(entries));
      zip.on('entry', (entry: yauzl.Entry) => {
        if (entry.fileName.endsWith('/') || !wanted(entry.fileName)) return zip.readEntry();
        zip.openReadStream(entry, (openError, stream) => {
          if (openError) return reject(openError);
          const chunks: Buffer[] = [];
          stream.on('data', (chunk: Buffer) => chunks.push(chunk));
          stream.on('error', reject);
          stream.on('end', () => {
            entries.push({ name: entry.fileName, data: Buffer.concat(chunks) });
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    });
  });
}
