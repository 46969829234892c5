/**
 * One writer per table and format for a run: <table>.csv and/or <table>.parquet,
 * every table present (with its header) even when it has no rows. Writes to one table are
 * chained, so callers may write concurrently.
 *
 * The tables named `perStudy` buffer each study's rows apart and write them together, as one
 * Parquet row group and the same records in the CSV, so both files keep one order. A study
 * can be given a copy (StudyCopy) that receives its row groups and CSV text exactly as they
 * are written into the run's files: its current parts, without encoding the rows twice.
 */
import { type Format, isTableFormat, type TableFormat } from '../config/schema.ts';
import type { Storage } from '../storage/types.ts';
import { allSettled } from '../util/concurrency.ts';
import { ColumnBuffers } from './column-buffers.ts';
import { type CsvOptions, createTableCsvWriter } from './csv.ts';
import {
  createParquetWriter,
  defaultRowGroupBytes,
  defaultRowGroupSize,
  type EncodedRowGroup,
} from './parquet.ts';
import { type Row, type TableName, tableNames } from './tables.ts';

export interface TableWritersOptions {
  formats: readonly Format[];
  csv: CsvOptions;
  /** Rows per Parquet row group. */
  rowGroupSize?: number;
  /** Buffered value bytes at which a study's rows of a `perStudy` table are written (all studies' together). */
  rowGroupBytes?: number;
  /** Tables whose row groups hold one study each, and which a StudyCopy receives. */
  perStudy?: readonly TableName[];
}

/** Receives one study's bytes of the `perStudy` tables, as they are written into the run's files. */
export interface StudyCopy {
  rowGroup(table: TableName, group: EncodedRowGroup): Promise<void>;
  /** CSV records as UTF-8 bytes, without a header. */
  csvText(table: TableName, text: Uint8Array): Promise<void>;
}

export interface TableFiles {
  table: TableName;
  rows: number;
  /** Paths in the run's storage, one per format. */
  files: string[];
}

export interface TableWriters {
  write<T extends TableName>(table: T, rows: readonly Row<T>[]): Promise<void>;
  /** From now on the study's rows of the `perStudy` tables also go to `copy`. */
  copyStudy(studyId: string, copy: StudyCopy): void;
  /** After the study's last write: its buffered rows are written (and copied) now. */
  endStudy(studyId: string): Promise<void>;
  close(): Promise<TableFiles[]>;
  abort(): Promise<void>;
}

/** What each format's writer offers; rows are typed per table by the caller. */
interface FormatWriter {
  path: string;
  write(rows: readonly Row<TableName>[]): Promise<void>;
  /** Writes the buffered rows of one study; returns what another file can take of them. */
  writeStudy(buffers: ColumnBuffers): Promise<(copy: StudyCopy) => Promise<void>>;
  close(): Promise<unknown>;
  abort(): Promise<void>;
}

interface TableState {
  table: TableName;
  writers: FormatWriter[];
  rows: number;
  /** The tail of this table's chain of writes. */
  queue: Promise<void>;
  /** A `perStudy` table's rows not yet written, by study id; null for the other tables. */
  studies: Map<string, ColumnBuffers> | null;
  bufferedBytes: number;
  /** The table's first file, as a refused row names it. */
  where: string;
}

export async function createTableWriters(
  storage: Storage,
  options: TableWritersOptions,
): Promise<TableWriters> {
  // xlsx is not a table format: its workbooks are written per study (xlsx.ts).
  const formats = [...new Set(options.formats.filter(isTableFormat))];
  const perStudy = new Set(options.perStudy ?? []);
  const rowGroupSize = options.rowGroupSize ?? defaultRowGroupSize;
  const rowGroupBytes = options.rowGroupBytes ?? defaultRowGroupBytes;
  const copies = new Map<string, StudyCopy>();
  // Every file opened at once; if one cannot be, those that were are removed.
  const opening = tableNames.map((table) =>
    Promise.allSettled(formats.map((format) => openWriter(storage, table, format, options))),
  );
  const opened = await Promise.all(opening);
  const states = new Map<TableName, TableState>();
  tableNames.forEach((table, index) => {
    const writers = (opened[index] ?? []).flatMap((result) =>
      result.status === 'fulfilled' ? [result.value] : [],
    );
    const studies = perStudy.has(table) ? new Map<string, ColumnBuffers>() : null;
    const where = storage.describe(writers[0]?.path ?? table);
    states.set(table, {
      table,
      writers,
      rows: 0,
      queue: Promise.resolve(),
      studies,
      bufferedBytes: 0,
      where,
    });
  });
  const failure = opened.flat().find((result) => result.status === 'rejected');
  if (failure) {
    await abortAll(states);
    throw failure.reason;
  }

  const stateOf = (table: TableName): TableState => {
    const state = states.get(table);
    if (!state) throw new Error(`unknown table ${table}`);
    return state;
  };

  /** Chained after the table's writes: a failed one poisons the table for later ones and close. */
  const enqueue = (state: TableState, work: () => Promise<void>): Promise<void> => {
    state.queue = state.queue.then(work);
    return state.queue;
  };

  async function writeStudy(state: TableState, studyId: string): Promise<void> {
    const buffers = state.studies?.get(studyId);
    if (!buffers) return;
    state.studies?.delete(studyId);
    state.bufferedBytes -= buffers.bytes;
    const copy = copies.get(studyId);
    for (const writer of state.writers) {
      const copyTo = await writer.writeStudy(buffers);
      if (copy) await copyTo(copy);
    }
  }

  /**
   * Buffers rows by study; a study is written once it fills a row group, and the largest
   * once the studies together hold a row group's bytes, so a table holds no more than before.
   */
  async function bufferByStudy(
    state: TableState,
    studies: Map<string, ColumnBuffers>,
    rows: readonly Row<TableName>[],
  ) {
    for (const row of rows) {
      const studyId = String(row.study_id);
      let buffers = studies.get(studyId);
      if (!buffers) {
        buffers = new ColumnBuffers(state.table, state.where);
        studies.set(studyId, buffers);
      }
      state.bufferedBytes += buffers.add(row as Record<string, unknown>);
      if (buffers.rows >= rowGroupSize || buffers.bytes >= rowGroupBytes) await writeStudy(state, studyId);
      else if (state.bufferedBytes >= rowGroupBytes) await writeStudy(state, largest(studies));
    }
  }

  return {
    write(table, rows) {
      const state = stateOf(table);
      if (rows.length === 0) return state.queue;
      return enqueue(state, async () => {
        // Row<T> of the declared table; the writers serialize by column name.
        const written = rows as readonly Row<TableName>[];
        if (state.studies) await bufferByStudy(state, state.studies, written);
        else for (const writer of state.writers) await writer.write(written);
        state.rows += rows.length;
      });
    },
    copyStudy(studyId, copy) {
      copies.set(studyId, copy);
    },
    async endStudy(studyId) {
      const perStudyStates = [...states.values()].filter((state) => state.studies);
      await Promise.all(perStudyStates.map((state) => enqueue(state, () => writeStudy(state, studyId))));
      copies.delete(studyId);
    },
    // All at once: one file's last row group is encoded while another's bytes are written.
    close: () =>
      allSettled(
        [...states].map(async ([table, state]): Promise<TableFiles> => {
          await enqueue(state, async () => {
            for (const studyId of [...(state.studies?.keys() ?? [])]) await writeStudy(state, studyId);
          });
          await allSettled(state.writers.map((writer) => writer.close()));
          return { table, rows: state.rows, files: state.writers.map((w) => w.path) };
        }),
      ),
    abort: () => abortAll(states),
  };
}

function largest(studies: ReadonlyMap<string, ColumnBuffers>): string {
  let key = '';
  let bytes = -1;
  for (const [studyId, buffers] of studies)
    if (buffers.bytes > bytes) [key, bytes] = [studyId, buffers.bytes];
  return key;
}

async function openWriter(
  storage: Storage,
  table: TableName,
  format: TableFormat,
  options: TableWritersOptions,
): Promise<FormatWriter> {
  const path = `${table}.${format}`;
  if (format === 'csv') {
    // No byte order mark on tables, whatever csv.bom says: they are datapackage.json's
    // resources, and its JavaScript reference reader takes a BOM for part of the first header.
    // csv.bom is for the wide sheets, the CSVs meant for spreadsheets.
    const writer = await createTableCsvWriter(storage, path, table, { ...options.csv, bom: false });
    return {
      path,
      ...writer,
      async writeStudy(buffers) {
        const text = await writer.writeValues(buffers);
        return (copy) => copy.csvText(table, text);
      },
    };
  }
  const writer = await createParquetWriter(storage, path, table, {
    rowGroupSize: options.rowGroupSize ?? defaultRowGroupSize,
  });
  return {
    ...writer,
    async writeStudy(buffers) {
      const group = await writer.writeGroup(buffers);
      return (copy) => copy.rowGroup(table, group);
    },
  };
}

async function abortAll(states: Map<TableName, TableState>): Promise<void> {
  for (const state of states.values()) {
    // Let writes in flight settle (their errors no longer matter) before removing files.
    await state.queue.catch(() => {});
    for (const writer of state.writers) await writer.abort();
  }
}
