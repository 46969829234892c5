/**
 * What an output format is: one module of src/output/formats/ declares it, and the registry
 * (index.ts) lists it. Two kinds:
 *
 * - a table format (csv, parquet): every table of a run as one file, <table>.<extension>, and
 *   current/'s parts; it writes a table block by block and reads one back;
 * - a study format (the wide sheet, xlsx, …): one file per study, <folder>/<link_id>.<extension>
 *   in a run and <folder>/study_id=<id>/<link_id>.<extension> in current/, written from the
 *   study's rows once its columns are known.
 *
 * Everything else that names a format (the pipeline file's schema, --formats, datapackage.json,
 * the codebooks, verify, the readers) asks the registry; docs/architecture.md says how to add one.
 */
import type { RowGroup } from 'hyparquet';
import type { WideColumn, WideRow } from '../../records.ts';
import type { Storage } from '../../storage/types.ts';
import type { Row, TableName } from '../../tables/index.ts';
import type { ColumnBuffers } from './column-buffers.ts';

/** How CSV files are written (the pipeline file's output.csv). */
export interface CsvOptions {
  /** Start the file with a UTF-8 byte order mark (for spreadsheets that guess the encoding). */
  bom: boolean;
  escape_formulae: boolean;
}

/** A Parquet row group encoded once: its bytes and its footer entry, for any file to take. */
export interface EncodedRowGroup {
  readonly bytes: Uint8Array;
  readonly metadata: RowGroup;
}

/** Whose files a line speaks of: a run's folder, current/, or one study's package (laid out as a run's). */
export type Holder = 'run' | 'current' | 'package';

/** datapackage.json's entry for a file of the format. */
export interface PackageEntry {
  format: string;
  mediatype: string;
}

interface FormatBase {
  /** The name output.formats and --formats take; also the files' extension. */
  readonly name: string;
  /** Whether output.formats lists it: false for a file every run writes (the wide sheet). */
  readonly selectable: boolean;
  /** Whether output.formats holds it when the pipeline file does not say. */
  readonly byDefault?: boolean;
  /**
   * What it adds, in a few words that follow "<name> for" or "<name> adds", for --formats' help
   * and the pipeline file's comment.
   */
  readonly help: string;
  readonly datapackage: PackageEntry;
  /** Where its line stands in the codebook's "Which file is for whom" (lower first). */
  readonly codebookRank: number;
  /** Its line of the codebook (README.md) under "Which file is for whom". */
  codebookLine(holder: Holder): string;
  /**
   * Every text a file of it holds, for verify's privacy scan of a package (matches are searched
   * in them): the file itself when it is text, its strings when it is binary.
   */
  texts(bytes: Buffer): Promise<readonly FileText[]>;
}

/** A text a file holds; `part` names the entry of a container it came from. */
export interface FileText {
  readonly part?: string;
  readonly text: string;
}

/** The texts of a file that is text itself (UTF-8). */
export async function wholeText(bytes: Buffer): Promise<readonly FileText[]> {
  return [{ text: bytes.toString('utf8') }];
}

/** A block of a table as the run wrote it into one format's file. */
export interface WrittenBlock {
  /**
   * What the file's writeBlock returned: the block as that format encoded it (a Parquet row
   * group, CSV text), which a file of the same format takes as it is (appendEncoded).
   */
  readonly encoded: unknown;
  /** The block's values, for a file of a format that takes no encoded block. */
  readonly values: ColumnBuffers;
}

/** Receives a group's blocks of the tables, as they are written into the run's files (current/'s parts). */
export interface StudyCopy {
  /** One block of `table`, written into the run's file in the format named `format`. */
  block(table: TableName, format: string, block: WrittenBlock): Promise<void>;
}

/** One table's file being written. */
export interface TableFileWriter {
  path: string;
  /** Writes one block; returns it as encoded, for a file of the format to take (appendEncoded). */
  writeBlock(buffers: ColumnBuffers): Promise<unknown>;
  /**
   * Appends a block another file of this format encoded (writeBlock's result) without encoding
   * it again: how a part of current/ takes the run's own bytes. Without it, such a part is
   * written from the block's values (writeBlock).
   */
  appendEncoded?(encoded: unknown): Promise<void>;
  close(): Promise<unknown>;
  abort(): Promise<void>;
}

/** A row as verify reads it: each column's value as text, null for a null or an empty cell. */
export type VerifyRow = Record<string, string | null>;

export interface TableFormatModule extends FormatBase {
  readonly kind: 'table';
  /** Whether its values read back exactly as written (a CSV cell may carry a formula escape). */
  readonly exact: boolean;
  /**
   * How erase takes the erased responses' rows out of a run's file without encoding the others
   * again: 'csv-records', its records filtered as bytes (erase/csv-records.ts); 'row-groups', its
   * row groups without an erased row copied as they lie (erase/parquet-groups.ts). Without it,
   * the file is read back and written again.
   */
  readonly erasedBy?: 'csv-records' | 'row-groups';
  /**
   * Whether current/ keeps its parts in this format whatever output.formats says: its merges
   * read them (one format does; the others are written beside it when asked for).
   */
  readonly currentStore: boolean;
  /** datapackage.json: the resource name of a table in this format ('' keeps the bare name). */
  readonly resourceSuffix: string;
  /** datapackage.json: profile and the fields beside the schema (a CSV's dialect). */
  readonly resource: { profile: string } & Record<string, unknown>;
  /** A table's file in a run. */
  tableFile(table: TableName): string;
  /** Opens a table's file: the run's (tableFile), or `path` (a part of current/). */
  open(
    storage: Storage,
    table: TableName,
    options: { csv: CsvOptions; path?: string },
  ): Promise<TableFileWriter>;
  /**
   * A table's file read back, a row group (or the whole file) at a time. `studies`: only their
   * rows; `columns`: at least these (and study_id) hold their values, others may be null.
   */
  read<T extends TableName>(
    storage: Pick<Storage, 'read' | 'readStream'>,
    path: string,
    bytes: number,
    table: T,
    options?: { studies?: ReadonlySet<string>; columns?: readonly string[] },
  ): AsyncIterable<Row<T>[]>;
  /** The column names a file holds, in order (a Parquet footer's, a CSV's header row). */
  columns(storage: Pick<Storage, 'readStream'>, path: string, bytes: number): Promise<string[]>;
  /**
   * verify's check of a table's file: every row read as text (at least the key columns, and
   * all of media's), header or schema problems pushed to `problems`; a file that cannot be
   * read throws.
   */
  verifyRows(
    storage: Storage,
    path: string,
    bytes: number,
    table: TableName,
    problems: string[],
    visit: (row: VerifyRow) => void,
  ): Promise<void>;
}

/** The rows of one response that a study file receives. */
export interface StudyRows {
  wide: WideRow;
  answers: Row<'answers'>[];
  transcript: Row<'transcript'>[];
}

export interface StudyFileInput {
  /** The run's files. */
  storage: Storage;
  /** A local folder for spills. */
  scratchDir: string;
  study: { id: string; link_id: string; title: string };
  /** The study's file name (src/names.ts studyFileNames), shared by its files in every format. */
  fileName: string;
  csv: CsvOptions;
  /** A warning of the study's, for the manifest and report.html (e.g. a cell cut to fit). */
  warn(code: string, message: string): void;
}

/** One study's file being written: rows as they come, the file once the columns are known. */
export interface StudyFileWriter {
  add(rows: StudyRows): Promise<void>;
  /** Writes the file; returns its path in the run and its header, where it has one. */
  finish(columns: readonly WideColumn[]): Promise<{ path: string; header?: readonly string[] }>;
  abort(): Promise<void>;
}

export interface StudyFormatModule extends FormatBase {
  readonly kind: 'study';
  /** The folder of a run (and of current/) that holds its files. */
  readonly folder: string;
  /** How its files' names end ('.csv' for the wide sheet). */
  readonly extension: string;
  /**
   * Whether its files hold the wide sheet as named variables (labelled/names.ts): the codebook
   * then lists each study's variable names with their slots and questions.
   */
  readonly namesVariables?: boolean;
  /** What one file is called in messages ("the workbook of <study> is missing"). */
  readonly fileNoun: string;
  /** What a file holds, for datapackage.json's description of it. */
  readonly description: string;
  /** A study's file in a run. */
  studyFile(fileName: string): string;
  open(input: StudyFileInput): StudyFileWriter;
  /** verify's check of one of its files in a run: what is wrong with it (none: nothing). */
  verifyFile(storage: Storage, path: string, bytes: number): Promise<string[]>;
}

export type FormatModule = TableFormatModule | StudyFormatModule;
