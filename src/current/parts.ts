/**
 * The current dataset's files: current/<table>/bucket=<NN>/part-<run id>.parquet (and .csv),
 * a part holding the rows of every study of its bucket (src/buckets.ts), with study_id among
 * its columns; how a part is read back row group by row group, and how a new one is written.
 */
import { stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { BUCKETS } from '../buckets.ts';
import type { Format } from '../config/schema.ts';
import type { CsvOptions } from '../output/formats/csv.ts';
import type { TableFileWriter, WrittenBlock } from '../output/formats/format.ts';
import { storeFormat, type TableFormat, tableFormatNamed, tableFormats } from '../output/formats/index.ts';
import { CURRENT_DIR } from '../output/layout.ts';
import { openTableFile, type TableRowWriter } from '../output/table-writers.ts';
import { compareRunIds } from '../run-id.ts';
import { LocalStorage } from '../storage/local.ts';
import type { Row, TableName } from '../tables/index.ts';
import type { CurrentStore } from './store.ts';

/** The partition folder of a bucket: bucket=00 to bucket=63. */
export function partitionName(bucket: number): string {
  return `bucket=${String(bucket).padStart(String(BUCKETS - 1).length, '0')}`;
}

export function partitionPath(table: TableName, bucket: number): string {
  return `${CURRENT_DIR}/${table}/${partitionName(bucket)}`;
}

export function partFileName(runId: string, format: Format): string {
  return `part-${runId}.${format}`;
}

/** part-<run id>.<format>, for every table format (a format's name is its files' extension). */
const partPattern = new RegExp(`^part-(.+)\\.(${tableFormats.map((format) => format.name).join('|')})$`);

/** A part's run id and format, or null for anything else (a part being written, a stray file). */
export function parsePartName(name: string): { runId: string; format: Format } | null {
  const match = partPattern.exec(name);
  return match ? { runId: match[1] as string, format: match[2] as Format } : null;
}

/**
 * Runs that published parts into current/ and were never committed (killed before `latest`
 * named them). Their parts stay beside the committed ones until their shard's next run removes
 * them; until then they are no part of current/ to its descriptor or its guide.
 */
export type UncommittedRuns = ReadonlySet<string>;

const NO_RUNS: UncommittedRuns = new Set();

/** Whether the file `path` (or its bare name) is a part of one of the `uncommitted` runs. */
export function ofUncommittedRun(path: string, uncommitted: UncommittedRuns): boolean {
  const part = parsePartName(path.slice(path.lastIndexOf('/') + 1));
  return part !== null && uncommitted.has(part.runId);
}

/**
 * The Parquet part of the latest run (run ids order as the runs started), among those of runs
 * that were committed when `uncommitted` names the others.
 */
export function newestPart(names: readonly string[], uncommitted = NO_RUNS): string | null {
  let newest: { name: string; runId: string } | null = null;
  for (const name of names) {
    const part = parsePartName(name);
    if (!part || part.format !== storeFormat.name || uncommitted.has(part.runId)) continue;
    if (!newest || compareRunIds(newest.runId, part.runId) < 0) newest = { name, runId: part.runId };
  }
  return newest?.name ?? null;
}

/** A part written in the run's scratch space, waiting to be moved into the store. */
export interface PreparedPart {
  /** Local files and the store paths they are moved to. */
  files: { local: string; target: string }[];
  /**
   * The local folder that holds the files and nothing else, under their store names, and
   * the partition folder it becomes where that folder is new: all of them in one move.
   */
  folder?: { local: string; target: string };
  /** The part's Parquet file where it is prepared, to read back before it is published. */
  parquet?: PartSource;
}

/** A Parquet part to read: in the store, or prepared in scratch and not yet published. */
export interface PartSource {
  store: CurrentStore;
  path: string;
  bytes: number;
}

/** A new part being written: rows in, then closed in scratch, published after the run commits. */
export interface PartWriter<T extends TableName> {
  readonly table: T;
  write(rows: readonly Row<T>[]): Promise<void>;
  /** Closes the part's local files. */
  finish(): Promise<PreparedPart>;
  abort(): Promise<void>;
}

/**
 * Writes the part into `dir` (the run's scratch space, a folder of this part's own): a part is
 * prepared while the run is still exporting other studies, and only moved into the store once
 * the run is committed.
 */
export async function createPartWriter<T extends TableName>(
  table: T,
  bucket: number,
  runId: string,
  /** Formats of the part: the store's first (package.ts: currentFormats). */
  options: { formats: readonly TableFormat[]; csv: CsvOptions; dir: string },
): Promise<PartWriter<T>> {
  const local = new LocalStorage(options.dir, { unseen: true });
  const writers: TableRowWriter<T>[] = [];
  try {
    for (const format of options.formats) {
      const path = partFileName(runId, format);
      writers.push(await openTableFile(tableFormatNamed(format), local, table, { csv: options.csv, path }));
    }
  } catch (error) {
    for (const writer of writers) await writer.abort().catch(() => {});
    throw error;
  }
  return {
    table,
    async write(rows) {
      if (rows.length === 0) return;
      for (const writer of writers) await writer.write(rows);
    },
    async finish() {
      for (const writer of writers) await writer.close();
      return await preparedPart(table, bucket, runId, options);
    },
    async abort() {
      for (const writer of writers) await writer.abort().catch(() => {});
    },
  };
}

/**
 * The closed files of a part in `dir`, one per format under its store name, and where they go
 * in the store.
 */
async function preparedPart(
  table: TableName,
  bucket: number,
  runId: string,
  options: { formats: readonly Format[]; dir: string },
): Promise<PreparedPart> {
  const partition = partitionPath(table, bucket);
  const files = options.formats.map((format) => ({
    local: join(options.dir, partFileName(runId, format)),
    target: `${partition}/${partFileName(runId, format)}`,
  }));
  const folder = { local: options.dir, target: partition };
  const parquet = partFileName(runId, storeFormat.name as TableFormat);
  if (!options.formats.includes(storeFormat.name as TableFormat)) return { files, folder };
  const bytes = (await stat(join(options.dir, parquet))).size;
  return { files, folder, parquet: { store: new LocalStorage(options.dir), path: parquet, bytes } };
}

/**
 * A new part that takes the run's own bytes (the run's StudyCopy): each format's blocks exactly
 * as written into the run's tables (a format whose files take no encoded block writes the
 * block's values). For a bucket with no previous part, whose part is every row the run writes
 * for the bucket's studies: their blocks come in the order they are written (the run writes a
 * bucket's copied rows in blocks of their own).
 */
export interface PartCopy {
  readonly table: TableName;
  /** A block the run wrote into its file in `format`; a format the part is not kept in is passed over. */
  block(format: string, block: WrittenBlock): Promise<void>;
  finish(): Promise<PreparedPart>;
  abort(): Promise<void>;
}

/**
 * `options.formats`: the store's first (package.ts: currentFormats), as the run also writes them.
 * `options.dir`: a folder of this part's own, made with its first file. Each file is opened
 * when its first bytes come (or at finish, for a table with no rows), not when the bucket
 * starts: the study's first request does not wait for its parts' files.
 */
export function createPartCopy(
  table: TableName,
  bucket: number,
  runId: string,
  options: { formats: readonly TableFormat[]; csv: CsvOptions; dir: string },
): PartCopy {
  // Rooted one level up, so that creating the first file makes the folder.
  const local = new LocalStorage(dirname(options.dir), { unseen: true });
  const folder = basename(options.dir);
  const files = new Map<string, Promise<TableFileWriter>>();
  const fileOf = (format: TableFormat): Promise<TableFileWriter> => {
    let file = files.get(format);
    if (!file) {
      const path = `${folder}/${partFileName(runId, format)}`;
      // Its CSV without a byte order mark (tableCsv), as the run's table files.
      file = tableFormatNamed(format).open(local, table, { csv: tableCsv(options.csv), path });
      files.set(format, file);
    }
    return file;
  };
  const kept = (format: string): format is TableFormat => options.formats.some((name) => name === format);
  // The bucket's studies are exported at once: their bytes go in one after another.
  let queue: Promise<void> = Promise.resolve();
  const inTurn = (work: () => Promise<void>) => {
    const turn = queue.then(work);
    queue = turn.catch(() => {});
    return turn;
  };
  return {
    table,
    block: (format, block) =>
      inTurn(async () => {
        if (!kept(format)) return;
        const file = await fileOf(format);
        if (file.appendEncoded) await file.appendEncoded(block.encoded);
        else await file.writeBlock(block.values);
      }),
    async finish() {
      await queue;
      for (const format of options.formats) await (await fileOf(format)).close();
      return await preparedPart(table, bucket, runId, options);
    },
    async abort() {
      await queue;
      for (const opened of files.values()) await opened.then((file) => file.abort()).catch(() => {});
    },
  };
}

/**
 * Moves a prepared part into the store, where each file appears complete or not at all: a
 * partition's first part as its whole folder where the store can, else file by file.
 */
export async function publishPart(store: CurrentStore, part: PreparedPart): Promise<string[]> {
  const targets = part.files.map((file) => file.target);
  if (part.folder && (await store.moveFolderIn(part.folder.local, part.folder.target))) return targets;
  for (const { local, target } of part.files) await store.moveIn(local, target);
  return targets;
}

/**
 * A part's CSV never starts with a byte order mark, whatever csv.bom says: parts are table
 * CSVs, read by programs (current/datapackage.json says utf-8, and Python's csv module or the
 * Frictionless readers take a BOM for part of the first column's name). csv.bom is for the
 * wide sheets.
 */
function tableCsv(csv: CsvOptions): CsvOptions {
  return { ...csv, bom: false };
}
