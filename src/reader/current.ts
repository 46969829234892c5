/**
 * current/ of an output, read: each table's newest part per partition (a bucket of studies,
 * or a study's folder of the earlier layout that the next run moves into buckets), only the
 * partitions a study can be in when one is asked for.
 */
import { bucketOf } from '../buckets.ts';
import { newestPart, parsePartName, partitionName, studyFolderName } from '../current/index.ts';
import { type PartReadOptions, readPart } from '../output/formats/parquet-read.ts';
import { CURRENT_DIR } from '../output/layout.ts';
import { compareRunIds } from '../run-id.ts';
import type { ListedFile, Storage } from '../storage/types.ts';
import type { Row, TableName } from '../tables/index.ts';

/** A file of current/: its path in the output (current/...) and size. */
export interface CurrentFile {
  path: string;
  bytes: number;
}

/** current/'s guide files, each read as a whole by whoever wants it. */
export const CURRENT_README = `${CURRENT_DIR}/README.md`;
export const CURRENT_REPORT = `${CURRENT_DIR}/report.html`;
export const CURRENT_DATAPACKAGE = `${CURRENT_DIR}/datapackage.json`;

export class CurrentReader {
  constructor(
    /** Rooted at the output (the folder holding current/ and runs/). */
    private readonly storage: Storage,
  ) {}

  /** The newest Parquet part of each partition of `table` (of `studyId`'s partitions when given). */
  async parts(table: TableName, studyId?: string): Promise<CurrentFile[]> {
    const base = `${CURRENT_DIR}/${table}`;
    const folders = studyId
      ? [partitionName(bucketOf(studyId)), studyFolderName(studyId)]
      : // A hidden folder is one being moved in; its part is not current/'s yet.
        (await this.storage.listFolders(base)).filter((folder) => !folder.startsWith('.'));
    const parts: CurrentFile[] = [];
    for (const folder of folders.sort()) {
      const files = await listAll(this.storage, `${base}/${folder}`);
      const name = newestPart(files.map((file) => file.path));
      const file = files.find((f) => f.path === name);
      if (file) parts.push({ path: `${base}/${folder}/${file.path}`, bytes: file.bytes });
    }
    return parts;
  }

  /** current/'s rows of `table`, a row group at a time; `studyId`: only that study's. */
  rows<T extends TableName>(table: T, studyId?: string): AsyncIterable<Row<T>[]> {
    return this.rowsIn(this.parts(table, studyId), table, studyId);
  }

  /**
   * The rows of `table` in these parts (as `parts` listed them), a row group at a time;
   * `columns`: only these read, the others null.
   */
  async *rowsIn<T extends TableName>(
    parts: Promise<CurrentFile[]>,
    table: T,
    studyId?: string,
    columns?: readonly (keyof Row<T> & string)[],
  ): AsyncIterable<Row<T>[]> {
    const options: PartReadOptions = {};
    if (studyId !== undefined) options.studies = new Set([studyId]);
    if (columns) options.columns = columns;
    for (const part of await parts) yield* readPart(this.storage, part.path, part.bytes, table, options);
  }

  /** The run that wrote the newest of the parts (studies' parts, which every run writes). */
  async newestRunId(): Promise<string | null> {
    const ids = (await this.parts('studies')).map(
      (part) => parsePartName(part.path.split('/').at(-1) ?? '')?.runId ?? '',
    );
    return ids.sort(compareRunIds).at(-1) ?? null;
  }

  /** current/README.md (the codebook), report.html or datapackage.json whole; null when absent. */
  guide(
    file: typeof CURRENT_README | typeof CURRENT_REPORT | typeof CURRENT_DATAPACKAGE,
  ): Promise<Buffer | null> {
    return this.storage.read(file);
  }

  /** A file of current/ (a sheet, a workbook, a part) as a stream, by its path in the output. */
  open(path: string) {
    return this.storage.readStream(path);
  }
}

/** Every file under `prefix`; none when it does not exist. */
async function listAll(storage: Storage, prefix: string): Promise<ListedFile[]> {
  const files: ListedFile[] = [];
  for await (const file of storage.list(prefix)) files.push(file);
  return files;
}
