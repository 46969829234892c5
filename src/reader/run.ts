/**
 * One committed run of an output, read through the storage seam: its manifest (what it
 * wrote, with each file's size and sha256), its tables row group by row group (Parquet, or
 * CSV for a run written without it), its media.zip's index, and its raw/ payloads.
 */
import type { Readable } from 'node:stream';
import { ZipIndex } from '../output/codecs/zip-index.ts';
import { tableFormatsToRead } from '../output/formats/index.ts';
import { isRawFile, MEDIA_ZIP } from '../output/layout.ts';
import { type Manifest, type ManifestFile, readManifest } from '../output/manifest.ts';
import type { Storage } from '../storage/types.ts';
import type { Row, TableName } from '../tables/index.ts';

export interface RunReader {
  readonly id: string;
  /** Rooted at the run's folder. */
  readonly storage: Storage;
  readonly manifest: Manifest;
  /** A file the manifest lists, by its path in the run. */
  file(path: string): ManifestFile | undefined;
  /** The run's rows of `table`, a row group at a time; `studies`: only these studies' rows. */
  rows<T extends TableName>(table: T, options?: { studies?: ReadonlySet<string> }): AsyncIterable<Row<T>[]>;
  /** The index of media.zip, read once; null when the run archived no recordings. */
  media(): Promise<ZipIndex | null>;
  /** raw/*.jsonl.gz, as the manifest lists them. */
  rawFiles(): ManifestFile[];
  /** A file of the run as a stream. */
  open(path: string): Promise<Readable>;
}

/**
 * The run in `storage` (rooted at its folder), or null when the folder holds no manifest (no
 * run, or one still being written: the manifest is written last). `id` defaults to the
 * manifest's run id.
 */
export async function openRun(storage: Storage, id?: string): Promise<RunReader | null> {
  const manifest = await readManifest(storage);
  if (!manifest) return null;
  const byPath = new Map(manifest.files.map((file) => [file.path, file]));
  let zip: Promise<ZipIndex | null> | null = null;
  return {
    id: id ?? manifest.run_id,
    storage,
    manifest,
    file: (path) => byPath.get(path),
    rows: (table, options = {}) => runRows(storage, byPath, table, options.studies),
    media() {
      const file = byPath.get(MEDIA_ZIP);
      zip ??= file ? ZipIndex.open(storage, MEDIA_ZIP, file.bytes) : Promise.resolve(null);
      zip.catch(() => {
        zip = null;
      });
      return zip;
    },
    rawFiles: () => manifest.files.filter((file) => isRawFile(file.path)),
    open: (path) => storage.readStream(path),
  };
}

async function* runRows<T extends TableName>(
  storage: Storage,
  files: ReadonlyMap<string, ManifestFile>,
  table: T,
  studies: ReadonlySet<string> | undefined,
): AsyncIterable<Row<T>[]> {
  for (const format of tableFormatsToRead) {
    const file = files.get(format.tableFile(table));
    if (file) {
      yield* format.read(storage, file.path, file.bytes, table, studies ? { studies } : {});
      return;
    }
  }
}
