/**
 * One writer per table and format for a run: <table>.csv and/or <table>.parquet,
 * every table present (with its header) even when it has no rows. Writes to one table are
 * chained, so callers may write concurrently.
 *
 * The tables named `perStudy` keep each study's rows in row groups of their own, and a study
 * can be given a copy (StudyCopy) that receives its row groups and CSV text exactly as they
 * are written into the run's files: its current parts, without encoding the rows twice.
 */
import { type Format, isTableFormat, type TableFormat } from '../config/schema.ts';
import type { Storage } from '../storage/types.ts';
import { allSettled } from '../util/concurrency.ts';
import { type CsvOptions, createTableCsvWriter } from './csv.ts';
import { createParquetWriter, defaultRowGroupSize, type EncodedRowGroup } from './parquet.ts';
import { type Row, type TableName, tableNames } from './tables.ts';

export interface TableWritersOptions {
  formats: readonly Format[];
  csv: CsvOptions;
  /** Rows per Parquet row group. */
  rowGroupSize?: number;
  /** Tables whose Parquet row groups hold one study each, and which a StudyCopy receives. */
  perStudy?: readonly TableName[];
}

/** Receives one study's bytes of the `perStudy` tables, as they are written into the run's files. */
export interface StudyCopy {
  rowGroup(table: TableName, group: EncodedRowGroup): Promise<void>;
  csvText(table: TableName, text: string): Promise<void>;
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
  endStudy?(studyId: string): Promise<void>;
  close(): Promise<unknown>;
  abort(): Promise<void>;
}

interface TableState {
  writers: FormatWriter[];
  rows: number;
  /** The tail of this table's chain of writes. */
  queue: Promise<void>;
}

export async function createTableWriters(
  storage: Storage,
  options: TableWritersOptions,
): Promise<TableWriters> {
  // xlsx is not a table format: its workbooks are written per study (xlsx.ts).
  const formats = [...new Set(options.formats.filter(isTableFormat))];
  const copies = new Map<string, StudyCopy>();
  const perStudy = new Set(options.perStudy ?? []);
  // Every file opened at once; if one cannot be, those that were are removed.
  const opening = tableNames.map((table) =>
    Promise.allSettled(
      formats.map((format) =>
        openWriter(storage, table, format, options, perStudy.has(table) ? copies : null),
      ),
    ),
  );
  const opened = await Promise.all(opening);
  const states = new Map<TableName, TableState>();
  tableNames.forEach((table, index) => {
    const writers = (opened[index] ?? []).flatMap((result) =>
      result.status === 'fulfilled' ? [result.value] : [],
    );
    states.set(table, { writers, rows: 0, queue: Promise.resolve() });
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

  return {
    write(table, rows) {
      const state = stateOf(table);
      if (rows.length === 0) return state.queue;
      return enqueue(state, async () => {
        // Row<T> of the declared table; the writers serialize by column name.
        for (const writer of state.writers) await writer.write(rows as readonly Row<TableName>[]);
        state.rows += rows.length;
      });
    },
    copyStudy(studyId, copy) {
      copies.set(studyId, copy);
    },
    async endStudy(studyId) {
      await Promise.all(
        [...perStudy].map((table) => {
          const state = stateOf(table);
          return enqueue(state, async () => {
            for (const writer of state.writers) await writer.endStudy?.(studyId);
          });
        }),
      );
      copies.delete(studyId);
    },
    // All at once: one file's last row group is encoded while another's bytes are written.
    close: () =>
      allSettled(
        [...states].map(async ([table, state]): Promise<TableFiles> => {
          await state.queue;
          await allSettled(state.writers.map((writer) => writer.close()));
          return { table, rows: state.rows, files: state.writers.map((w) => w.path) };
        }),
      ),
    abort: () => abortAll(states),
  };
}

/** `copies`: by study id, for a `perStudy` table; null for the others. */
async function openWriter(
  storage: Storage,
  table: TableName,
  format: TableFormat,
  options: TableWritersOptions,
  copies: ReadonlyMap<string, StudyCopy> | null,
): Promise<FormatWriter> {
  const path = `${table}.${format}`;
  if (format === 'csv') {
    const onText = async (studyId: string, text: string) => copies?.get(studyId)?.csvText(table, text);
    // No byte order mark on tables, whatever csv.bom says: they are datapackage.json's
    // resources, and its JavaScript reference reader takes a BOM for part of the first header.
    // csv.bom is for the wide sheets, the CSVs meant for spreadsheets.
    const csv = { ...options.csv, bom: false };
    const writer = await createTableCsvWriter(storage, path, table, csv, copies ? { onText } : undefined);
    return { path, ...writer };
  }
  const onRowGroup = async (studyId: string, group: EncodedRowGroup) =>
    copies?.get(studyId)?.rowGroup(table, group);
  return await createParquetWriter(storage, path, table, {
    rowGroupSize: options.rowGroupSize ?? defaultRowGroupSize,
    ...(copies ? { perStudy: { onRowGroup } } : {}),
  });
}

async function abortAll(states: Map<TableName, TableState>): Promise<void> {
  for (const state of states.values()) {
    // Let writes in flight settle (their errors no longer matter) before removing files.
    await state.queue.catch(() => {});
    for (const writer of state.writers) await writer.abort();
  }
}
