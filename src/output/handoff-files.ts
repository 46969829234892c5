/**
 * A study's files in a package handed to someone (share's package, archive's bag), from its rows
 * as the handoff reader gives them (de-identified where a privacy profile applies): every table
 * in every table format of the registry, and the study's file in each study format the output
 * writes (the wide sheet always; the workbook, sav, dta when among its formats), by the run's
 * own writers. One implementation, so every handoff holds the same files made from the same
 * rows, and no file of a package is ever copied from current/ (whose text is raw).
 *
 * Streamed: each response table's rows go through an external sort by key (sorted-spill.ts),
 * then are read back response by response (a merge on response_id), so a study of any size is
 * held a response (and the sorts' buffers) at a time. The tables keep key order (sortByKey's);
 * each response's rows are also handed to `onResponse` (a bag's conversation pages).
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { WideColumn } from '../records.ts';
import { LocalStorage } from '../storage/local.ts';
import {
  compareKeys,
  type DataTableName,
  type KeyValues,
  keyOf,
  type Row,
  sortByKey,
  type TableName,
  tableNames,
} from '../tables/index.ts';
import type { CsvOptions } from './formats/csv.ts';
import type { StudyFileWriter, StudyFormatModule } from './formats/format.ts';
import {
  type Format,
  tableFormats as registeredTableFormats,
  studyFormatsOf,
  type TableFormat,
  tableFormatOfFile,
} from './formats/index.ts';
import { wideFormat } from './formats/wide.ts';
import { RunStats } from './guide/run-stats.ts';
import { createSortedSpill, type SortedSpill } from './sorted-spill.ts';
import { createTableWriters, type TableWriters } from './table-writers.ts';
import { AttributeKeys, WideRowBuilder, wideColumns } from './wide-rows.ts';

/** A study as a handoff reader gives it: its row and its rows of every table, a group at a time. */
export interface HandoffSource {
  study: Row<'studies'>;
  rows<T extends TableName>(table: T): AsyncIterable<Row<T>[]>;
}

/** The tables whose rows belong to a response, read back response by response. */
const responseTables = ['responses', 'answers', 'transcript', 'attributes', 'media'] as const;
type ResponseTable = (typeof responseTables)[number];

/** One response's rows of every response table, each in key order. */
export type ResponseRows = { response: Row<'responses'> } & {
  [T in Exclude<ResponseTable, 'responses'>]: Row<T>[];
};

export interface HandoffFilesInput {
  source: HandoffSource;
  /** The local folder the files go into: study files in their formats' folders, tables in `tablesFolder`. */
  dir: string;
  /** The tables' folder under `dir` ('' for beside the study files). */
  tablesFolder: string;
  /** A local folder of the package's own for spills and sorts. */
  scratchDir: string;
  /** The output's formats: each study format among them adds its file, beside the wide sheet. */
  formats: readonly Format[];
  /** As the output writes CSV: the sheets with its byte order mark, the tables without. */
  csv: CsvOptions;
  /** The study's file name (src/names.ts), its sheets'. */
  fileName: string;
  /** Each response's rows, in response_id order, once its files have them. */
  onResponse?: (rows: ResponseRows) => Promise<void>;
  /** A warning of the study's (a workbook's cell cut to fit), in words. */
  onWarning?: (message: string) => void;
}

export interface HandoffTableFile {
  table: DataTableName;
  format: TableFormat;
  /** Under `dir`. */
  path: string;
}

export interface HandoffStudyFile {
  format: StudyFormatModule;
  /** Under `dir`. */
  path: string;
  /** The wide sheet's header as written; null for any other format's file. */
  header: readonly string[] | null;
}

export interface HandoffFiles {
  tables: HandoffTableFile[];
  studyFiles: HandoffStudyFile[];
  /** The wide sheet's columns (its questions and attribute keys), the codebook's variables. */
  columns: WideColumn[];
  /** What report.html draws, counted as the rows passed. */
  stats: RunStats;
  /** The responses the files hold, as they name them. */
  responseIds: string[];
}

/**
 * Every table format of the registry, whatever the output's formats: a package opens in a
 * spreadsheet (CSV) and in DuckDB (Parquet) alike.
 */
const tableFormats = registeredTableFormats.map((format) => format.name as TableFormat);

/** Responses whose rows are buffered before they go to the table writers together. */
const responsesPerWrite = 256;

export async function writeHandoffFiles(input: HandoffFilesInput): Promise<HandoffFiles> {
  const { source } = input;
  const stats = new RunStats();
  const tablesDir = join(input.dir, input.tablesFolder);
  await mkdir(tablesDir, { recursive: true });
  const tables = await createTableWriters(new LocalStorage(tablesDir), {
    formats: tableFormats,
    // Tables carry no byte order mark (csv.bom is for the sheets): table readers take it for a name.
    csv: { ...input.csv, bom: false },
    tables: tableNames,
    // A study's tables fill their row groups one after another: each holds a quarter of a run's.
    rowGroupBytes: SPILL_BYTES,
  });
  const studyFiles = new StudyFiles(input);
  const responseIds: string[] = [];
  try {
    const studies = await whole(source, 'studies');
    const questions = await whole(source, 'questions');
    stats.add('studies', studies);
    stats.add('questions', questions);
    await tables.write('studies', studies);
    await tables.write('questions', questions);
    const pending = new PendingRows(tables, stats);
    for await (const rows of responsesOf(source, input.scratchDir)) {
      await pending.add(rows);
      if (!rows.response) continue;
      responseIds.push(rows.response.response_id);
      await studyFiles.add(rows as ResponseRows);
      await input.onResponse?.(rows as ResponseRows);
      if (pending.responses >= responsesPerWrite) await pending.flush();
    }
    await pending.flush();
    const written: HandoffTableFile[] = [];
    for (const { table, files } of await tables.close())
      for (const path of files)
        written.push({
          table: table as DataTableName,
          format: tableFormatOfFile(table, path),
          path: input.tablesFolder === '' ? path : `${input.tablesFolder}/${path}`,
        });
    return { tables: written, ...(await studyFiles.finish(questions)), stats, responseIds };
  } catch (error) {
    await tables.abort();
    await studyFiles.abort();
    throw error;
  }
}

/** A small table of the study (studies, questions) whole, in key order. */
async function whole<T extends 'studies' | 'questions'>(source: HandoffSource, table: T): Promise<Row<T>[]> {
  const rows: Row<T>[] = [];
  for await (const group of source.rows(table)) rows.push(...group);
  return sortByKey(table, rows);
}

/** Rows of several responses, gathered per table so the writers get them in blocks. */
class PendingRows {
  responses = 0;
  #rows = new Map<ResponseTable, Row<ResponseTable>[]>();

  constructor(
    private readonly writers: TableWriters,
    private readonly stats: RunStats,
  ) {}

  async add(rows: Partial<ResponseRows>): Promise<void> {
    for (const table of responseTables) {
      const own = table === 'responses' ? (rows.response ? [rows.response] : []) : (rows[table] ?? []);
      if (own.length === 0) continue;
      const list = this.#rows.get(table) ?? [];
      list.push(...(own as Row<ResponseTable>[]));
      this.#rows.set(table, list);
    }
    this.responses += 1;
  }

  async flush(): Promise<void> {
    for (const [table, rows] of this.#rows) {
      this.stats.add(table, rows);
      await this.writers.write(table, rows);
    }
    this.#rows = new Map();
    this.responses = 0;
  }
}

/** The study's file in each study format the output writes, a response at a time. */
class StudyFiles {
  readonly #keys = new AttributeKeys();
  readonly #formats: StudyFormatModule[];
  readonly #writers: StudyFileWriter[];

  constructor(input: HandoffFilesInput) {
    const study = input.source.study;
    this.#formats = studyFormatsOf(input.formats);
    const storage = new LocalStorage(input.dir);
    this.#writers = this.#formats.map((format) =>
      format.open({
        storage,
        scratchDir: input.scratchDir,
        study: { id: study.study_id, link_id: study.link_id, title: study.title },
        fileName: input.fileName,
        csv: input.csv,
        warn: (_code, message) => input.onWarning?.(message),
      }),
    );
  }

  async add(rows: ResponseRows): Promise<void> {
    const builder = new WideRowBuilder(this.#keys);
    for (const answer of rows.answers) builder.answer(answer);
    for (const attribute of rows.attributes) builder.attribute(attribute);
    const own = { wide: builder.row(rows.response), answers: rows.answers, transcript: rows.transcript };
    for (const writer of this.#writers) await writer.add(own);
  }

  async finish(
    questions: readonly Row<'questions'>[],
  ): Promise<{ studyFiles: HandoffStudyFile[]; columns: WideColumn[] }> {
    const columns = wideColumns(questions, this.#keys.chosen().keys);
    const files: HandoffStudyFile[] = [];
    for (const [i, writer] of this.#writers.entries()) {
      const format = this.#formats[i] as StudyFormatModule;
      const { path, header } = await writer.finish(columns);
      files.push({ format, path, header: format === wideFormat && header ? [...header] : null });
    }
    return { studyFiles: files, columns };
  }

  async abort(): Promise<void> {
    for (const writer of this.#writers) await writer.abort().catch(() => {});
  }
}

/**
 * The study's response tables, response by response in response_id order: each table sorted by
 * its key through a spill, then the sorted tables merged on response_id. Rows of a response with
 * no responses row (none is expected) still come, with `response` undefined, so none is lost.
 */
async function* responsesOf(source: HandoffSource, scratchDir: string): AsyncIterable<Partial<ResponseRows>> {
  const spills = new Map<ResponseTable, SortedSpill<Row<ResponseTable>>>();
  try {
    for (const table of responseTables) {
      const spill = createSortedSpill<Row<ResponseTable>, KeyValues>({
        dir: scratchDir,
        name: `handoff-${table}`,
        // The key's values only: a buffered row is held as its JSON line, not twice.
        keyOf: keyOf(table) as (row: Row<ResponseTable>) => KeyValues,
        compare: compareKeys,
        runBytes: SPILL_BYTES,
      });
      spills.set(table, spill);
      for await (const group of source.rows(table)) for (const row of group) await spill.add(row);
    }
    const cursors = responseTables.map(
      (table) => new Cursor(table, (spills.get(table) as SortedSpill<Row<ResponseTable>>).sorted()),
    );
    for (const cursor of cursors) await cursor.next();
    for (;;) {
      const heads = cursors.flatMap((cursor) => (cursor.head ? [cursor.head.response_id] : []));
      if (heads.length === 0) return;
      const id = heads.reduce((a, b) => (b < a ? b : a));
      const rows: Partial<ResponseRows> = {};
      for (const cursor of cursors) {
        const own = await cursor.takeWhile(id);
        if (cursor.table === 'responses') rows.response = own[0] as Row<'responses'> | undefined;
        else (rows as Record<string, unknown>)[cursor.table] = own;
      }
      yield rows;
    }
  } finally {
    for (const spill of spills.values()) await spill.remove();
  }
}

/** Bytes of JSON a table's sort holds before it writes a run: five tables sort at once. */
const SPILL_BYTES = 2 ** 18;

/** A sorted table read a row ahead. */
class Cursor {
  head: Row<ResponseTable> | undefined;
  readonly #rows: AsyncIterator<Row<ResponseTable>>;

  constructor(
    readonly table: ResponseTable,
    rows: AsyncIterable<Row<ResponseTable>>,
  ) {
    this.#rows = rows[Symbol.asyncIterator]();
  }

  async next(): Promise<void> {
    const step = await this.#rows.next();
    this.head = step.done ? undefined : step.value;
  }

  /** The rows of `responseId` (the head onwards). */
  async takeWhile(responseId: string): Promise<Row<ResponseTable>[]> {
    const taken: Row<ResponseTable>[] = [];
    while (this.head && this.head.response_id === responseId) {
      taken.push(this.head);
      await this.next();
    }
    return taken;
  }
}
