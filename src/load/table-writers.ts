/**
 * One writer per table and format for a run: <table>.csv and/or <table>.parquet,
 * every table present (with its header) even when it has no rows. Writes to one table are
 * chained, so callers may write concurrently.
 */
import { type Format, isTableFormat, type TableFormat } from '../config/schema.ts';
import type { Storage } from '../storage/types.ts';
import { allSettled } from '../util/concurrency.ts';
import { type CsvOptions, createTableCsvWriter } from './csv.ts';
import { createParquetWriter, defaultRowGroupSize } from './parquet.ts';
import { type Row, type TableName, tableNames } from './tables.ts';

export interface TableWritersOptions {
  formats: readonly Format[];
  csv: CsvOptions;
  /** Rows per Parquet row group. */
  rowGroupSize?: number;
}

export interface TableFiles {
  table: TableName;
  rows: number;
  /** Paths in the run's storage, one per format. */
  files: string[];
}

export interface TableWriters {
  write<T extends TableName>(table: T, rows: readonly Row<T>[]): Promise<void>;
  close(): Promise<TableFiles[]>;
  abort(): Promise<void>;
}

/** What each format's writer offers; rows are typed per table by the caller. */
interface FormatWriter {
  path: string;
  write(rows: readonly Row<TableName>[]): Promise<void>;
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

  return {
    write(table, rows) {
      const state = stateOf(table);
      if (rows.length === 0) return state.queue;
      const next = state.queue.then(async () => {
        // Row<T> of the declared table; the writers serialize by column name.
        for (const writer of state.writers) await writer.write(rows as readonly Row<TableName>[]);
        state.rows += rows.length;
      });
      // A failed write poisons the table: later writes and close report the same error.
      state.queue = next;
      return next;
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
    return { path, ...writer };
  }
  return await createParquetWriter(storage, path, table, {
    rowGroupSize: options.rowGroupSize ?? defaultRowGroupSize,
  });
}

async function abortAll(states: Map<TableName, TableState>): Promise<void> {
  for (const state of states.values()) {
    // Let writes in flight settle (their errors no longer matter) before removing files.
    await state.queue.catch(() => {});
    for (const writer of state.writers) await writer.abort();
  }
}
