/**
 * One committed run of an output, read through the storage seam: its manifest (what it
 * wrote, with each file's size and sha256), its tables row group by row group (Parquet, or
 * CSV for a run written without it), its media.zip's index, and its raw/ payloads.
 */
import type { Readable } from 'node:stream';
import Papa from 'papaparse';
import { readPart } from '../current/index.ts';
import { isRawFile, MEDIA_ZIP } from '../output/layout.ts';
import { type Manifest, type ManifestFile, readManifest } from '../output/manifest.ts';
import type { Storage } from '../storage/types.ts';
import { type Row, type TableName, tables } from '../tables/index.ts';
import { ZipIndex } from './zip-index.ts';

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
  const parquet = files.get(`${table}.parquet`);
  if (parquet) {
    yield* readPart(storage, parquet.path, parquet.bytes, table, studies ? { studies } : {});
    return;
  }
  const csv = files.get(`${table}.csv`);
  if (!csv) return;
  const rows = await readCsvTable(storage, csv.path, table);
  yield studies ? rows.filter((row) => studies.has(String((row as { study_id?: unknown }).study_id))) : rows;
}

/**
 * A run written with CSV only: cells back to the declared types (an empty cell is null). Its
 * text cells are as written, so a formula-escaped cell keeps its leading apostrophe.
 */
async function readCsvTable<T extends TableName>(
  storage: Storage,
  path: string,
  table: T,
): Promise<Row<T>[]> {
  const text = ((await storage.read(path)) ?? Buffer.alloc(0)).toString('utf8').replace(/^\ufeff/, '');
  const parsed = Papa.parse<Record<string, string>>(text, { header: true, skipEmptyLines: true });
  return parsed.data.map((cells) => {
    const row: Record<string, unknown> = {};
    for (const column of tables[table].columns) {
      const cell = cells[column.name] ?? '';
      if (cell === '') row[column.name] = column.nullable ? null : '';
      else if (column.type === 'integer') row[column.name] = Number(cell);
      else if (column.type === 'boolean') row[column.name] = cell === 'true';
      else row[column.name] = cell;
    }
    return row as Row<T>;
  });
}
