/**
 * One writer per table and format for a run: <table>.csv and/or <table>.parquet,
 * every table present (with its header) even when it has no rows. Writes to one table are
 * chained, so callers may write concurrently.
 *
 * Rows are buffered in blocks and each block is written into every format's file (one Parquet
 * row group, the same records in the CSV), so the files keep one order. In the tables named
 * `perStudy` a study can be given a copy (StudyCopy) that receives each block as every format
 * encoded it into the run's files: its current parts, without encoding the rows twice.
 * The studies given one copy (a group: the studies of one bucket of current/) share a block
 * of their own, written when the group's last study ends; all other rows share one block.
 */

import type { Storage } from '../storage/types.ts';
import { type Row, runTableNames, type TableName } from '../tables/index.ts';
import { allSettled, nextTurn } from '../util/concurrency.ts';
import { ColumnBuffers } from './formats/column-buffers.ts';
import type { CsvOptions } from './formats/csv.ts';
import {
  type Format,
  type StudyCopy,
  type TableFileWriter,
  type TableFormatModule,
  tableFormatsOf,
} from './formats/index.ts';
import { defaultRowGroupBytes, defaultRowGroupSize } from './formats/parquet.ts';

export interface TableWritersOptions {
  formats: readonly Format[];
  csv: CsvOptions;
  /** Rows per Parquet row group. */
  rowGroupSize?: number;
  /** Buffered value bytes of a table (all its blocks together) at which a block is written. */
  rowGroupBytes?: number;
  /** Tables whose copied groups get row groups of their own, which a StudyCopy receives. */
  perStudy?: readonly TableName[];
  /** The tables written (default: every table a run writes). */
  tables?: readonly TableName[];
}

export interface TableFiles {
  table: TableName;
  rows: number;
  /** Paths in the run's storage, one per format. */
  files: string[];
}

export interface TableWriters {
  write<T extends TableName>(table: T, rows: readonly Row<T>[]): Promise<void>;
  /**
   * From now on the study's rows of the `perStudy` tables also go to `copy`, which the studies
   * of `group` share (by default, the study alone).
   */
  copyStudy(studyId: string, copy: StudyCopy, group?: string): void;
  /**
   * After the study's last write. `endsGroup` (by default true): no study of its group writes
   * any more, so the group's buffered rows are written (and copied) now.
   */
  endStudy(studyId: string, options?: { endsGroup?: boolean }): Promise<void>;
  close(): Promise<TableFiles[]>;
  abort(): Promise<void>;
}

interface TableState {
  table: TableName;
  /** Its files, each with the name of its format (what a StudyCopy is told). */
  writers: { format: string; file: TableFileWriter }[];
  rows: number;
  /** The tail of this table's chain of writes. */
  queue: Promise<void>;
  /** Rows not yet written: a copied group's by its key, all others under one key (''). */
  blocks: Map<string, ColumnBuffers>;
  /** The key of a row's block. */
  blockOf: (row: Row<TableName>) => string;
  bufferedBytes: number;
  /** The table's first file, as a refused row names it. */
  where: string;
}

const wholeTable = () => '';

/** One table's file in one format, written row batch by row batch in blocks cut as a run's are. */
export interface TableRowWriter<T extends TableName> {
  path: string;
  write(rows: readonly Row<T>[]): Promise<void>;
  close(): Promise<unknown>;
  abort(): Promise<void>;
}

/** Opens `path` (a part of current/) in `format` for rows of `table`. */
export async function openTableFile<T extends TableName>(
  format: TableFormatModule,
  storage: Storage,
  table: T,
  options: { csv: CsvOptions; path: string },
): Promise<TableRowWriter<T>> {
  const file = await format.open(storage, table, options);
  const where = storage.describe(file.path);
  let block = new ColumnBuffers(table, where);
  const flush = async () => {
    const full = block;
    block = new ColumnBuffers(table, where);
    await file.writeBlock(full);
  };
  return {
    path: file.path,
    async write(rows) {
      for (const row of rows) {
        block.add(row as Record<string, unknown>);
        if (block.rows >= defaultRowGroupSize || block.bytes >= defaultRowGroupBytes) await flush();
      }
    },
    async close() {
      if (block.rows > 0) await flush();
      return file.close();
    },
    abort: () => file.abort(),
  };
}

export async function createTableWriters(
  storage: Storage,
  options: TableWritersOptions,
): Promise<TableWriters> {
  // A study format (the workbooks) is written per study, by export-study.ts.
  const formats = tableFormatsOf(options.formats);
  const perStudy = new Set(options.perStudy ?? []);
  const rowGroupSize = options.rowGroupSize ?? defaultRowGroupSize;
  const rowGroupBytes = options.rowGroupBytes ?? defaultRowGroupBytes;
  /** A copied study's block key; the copy of each key. */
  const groupOf = new Map<string, string>();
  const copies = new Map<string, StudyCopy>();
  // Only a group with a copy needs row groups of its own; the others' rows share the table's
  // (a row group per study of two responses is mostly its metadata, kept until the footer).
  const copiedGroupOf = (row: Row<TableName>) => groupOf.get(String(row.study_id)) ?? '';
  const states = await openTables(storage, options, formats, (table) =>
    perStudy.has(table) ? copiedGroupOf : wholeTable,
  );
  const stateOf = (table: TableName): TableState => {
    const state = states.get(table);
    if (!state) throw new Error(`unknown table ${table}`);
    return state;
  };

  async function writeBlock(state: TableState, key: string): Promise<void> {
    const buffers = state.blocks.get(key);
    if (!buffers) return;
    state.blocks.delete(key);
    state.bufferedBytes -= buffers.bytes;
    const copy = copies.get(key);
    for (const { format, file } of state.writers) {
      // Encoding a block takes milliseconds, and a study's end encodes every table's at once:
      // answers that arrived meanwhile are taken first, so requests keep flowing.
      await nextTurn();
      const encoded = await file.writeBlock(buffers);
      if (copy) await copy.block(state.table, format, { encoded, values: buffers });
    }
  }

  /**
   * A block is written once it fills a row group, and the largest once the table's blocks
   * together hold a row group's bytes: a table never buffers more than one row group.
   */
  async function buffer(state: TableState, rows: readonly Row<TableName>[]): Promise<void> {
    for (const row of rows) {
      const key = state.blockOf(row);
      let buffers = state.blocks.get(key);
      if (!buffers) {
        buffers = new ColumnBuffers(state.table, state.where);
        state.blocks.set(key, buffers);
      }
      state.bufferedBytes += buffers.add(row as Record<string, unknown>);
      if (buffers.rows >= rowGroupSize || buffers.bytes >= rowGroupBytes) await writeBlock(state, key);
      else if (state.bufferedBytes >= rowGroupBytes) await writeBlock(state, largest(state.blocks));
    }
  }

  return {
    write(table, rows) {
      const state = stateOf(table);
      if (rows.length === 0) return state.queue;
      return enqueue(state, async () => {
        // Row<T> of the declared table; the writers serialize by column name.
        await buffer(state, rows as readonly Row<TableName>[]);
        state.rows += rows.length;
      });
    },
    copyStudy(studyId, copy, group = studyId) {
      // A key no table's shared block ('') can have.
      const key = `copy:${group}`;
      groupOf.set(studyId, key);
      copies.set(key, copy);
    },
    async endStudy(studyId, options = {}) {
      const key = groupOf.get(studyId);
      if (key === undefined) return;
      const endsGroup = options.endsGroup !== false;
      // Behind the study's writes still queued, which put its rows in its group's block.
      const ofStudies = [...perStudy].map(stateOf);
      await Promise.all(
        ofStudies.map((state) =>
          enqueue(state, async () => {
            if (endsGroup) await writeBlock(state, key);
          }),
        ),
      );
      groupOf.delete(studyId);
      if (endsGroup) copies.delete(key);
    },
    close: () => closeTables(states, writeBlock),
    abort: () => abortAll(states),
  };
}

/** Every table's files opened at once; if one cannot be, those that were are removed. */
async function openTables(
  storage: Storage,
  options: TableWritersOptions,
  formats: readonly TableFormatModule[],
  blockOf: (table: TableName) => TableState['blockOf'],
): Promise<Map<TableName, TableState>> {
  const written = options.tables ?? runTableNames;
  const opening = written.map((table) =>
    Promise.allSettled(formats.map((format) => format.open(storage, table, options))),
  );
  const opened = await Promise.all(opening);
  const states = new Map<TableName, TableState>();
  written.forEach((table, index) => {
    const writers = (opened[index] ?? []).flatMap((result, at) =>
      result.status === 'fulfilled'
        ? [{ format: (formats[at] as TableFormatModule).name, file: result.value }]
        : [],
    );
    states.set(table, {
      table,
      writers,
      rows: 0,
      queue: Promise.resolve(),
      blocks: new Map(),
      blockOf: blockOf(table),
      bufferedBytes: 0,
      where: storage.describe(writers[0]?.file.path ?? table),
    });
  });
  const failure = opened.flat().find((result) => result.status === 'rejected');
  if (failure) {
    await abortAll(states);
    throw failure.reason;
  }
  return states;
}

/**
 * Every table's last blocks written and its files closed, all at once: one file's last row
 * group is encoded while another's bytes are written.
 */
function closeTables(
  states: ReadonlyMap<TableName, TableState>,
  writeBlock: (state: TableState, key: string) => Promise<void>,
): Promise<TableFiles[]> {
  return allSettled(
    [...states].map(async ([table, state]): Promise<TableFiles> => {
      await enqueue(state, async () => {
        for (const key of [...state.blocks.keys()]) await writeBlock(state, key);
      });
      await allSettled(state.writers.map((writer) => writer.file.close()));
      return { table, rows: state.rows, files: state.writers.map((writer) => writer.file.path) };
    }),
  );
}

/** Chained after the table's writes: a failed one poisons the table for later ones and close. */
function enqueue(state: TableState, work: () => Promise<void>): Promise<void> {
  state.queue = state.queue.then(work);
  return state.queue;
}

function largest(blocks: ReadonlyMap<string, ColumnBuffers>): string {
  let largestKey = '';
  let bytes = -1;
  for (const [key, buffers] of blocks) if (buffers.bytes > bytes) [largestKey, bytes] = [key, buffers.bytes];
  return largestKey;
}

async function abortAll(states: Map<TableName, TableState>): Promise<void> {
  for (const state of states.values()) {
    // Let writes in flight settle (their errors no longer matter) before removing files.
    await state.queue.catch(() => {});
    for (const writer of state.writers) await writer.file.abort();
  }
}
