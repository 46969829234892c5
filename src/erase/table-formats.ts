/**
 * How erase takes rows out of a table file: through the format registry (src/output/formats),
 * each table format reads its file back (`read`) and writes the rows kept into a new file of
 * the same format (`open`, block by block), so "filter these rows out" is read-back + write and
 * a format added to the registry is erased like the others. `tableFormatOf` names the format a
 * run's file is in; a file no format claims is one erase will not touch blind (run-files.ts
 * refuses the run).
 */
import { ColumnBuffers } from '../output/formats/column-buffers.ts';
import type { CsvOptions } from '../output/formats/csv.ts';
import { type TableFormatModule, tableFormats } from '../output/formats/index.ts';
import type { Storage } from '../storage/types.ts';
import { type Row, runTableNames, type TableName } from '../tables/index.ts';

/** A new table file, written row batch by row batch. */
export interface TableFileWriter {
  write(rows: readonly Row<TableName>[]): Promise<void>;
  close(): Promise<unknown>;
  abort(): Promise<void>;
}

export interface TableFormat {
  readonly name: string;
  /** Whether its values read back exactly as written (the registry's word): the one to read from. */
  readonly exact: boolean;
  /** How the format's file loses rows without the others written again (the registry's word). */
  readonly erasedBy: TableFormatModule['erasedBy'];
  /** The file's rows, a batch at a time, as the table's row values (`columns`: at least these). */
  read(
    storage: Storage,
    path: string,
    table: TableName,
    bytes: number,
    options?: { columns?: readonly string[] },
  ): AsyncIterable<Row<TableName>[]>;
  /** A new file of the table in the same format, in `storage` under the run's name for it. */
  create(storage: Storage, table: TableName, csv: CsvOptions): Promise<TableFileWriter>;
}

/** Rows per block handed to a format's writer (a Parquet row group each). */
const BLOCK_ROWS = 50_000;

function throughRegistry(module: TableFormatModule): TableFormat {
  return {
    name: module.name,
    exact: module.exact,
    erasedBy: module.erasedBy,
    read: (storage, path, table, bytes, options) => module.read(storage, path, bytes, table, options),
    async create(storage, table, csv) {
      const file = await module.open(storage, table, { csv });
      let block = new ColumnBuffers(table, storage.describe(file.path));
      const flush = async () => {
        if (block.rows === 0) return;
        const full = block;
        block = new ColumnBuffers(table, storage.describe(file.path));
        await file.writeBlock(full);
      };
      return {
        async write(rows) {
          for (const row of rows) {
            block.add(row as Record<string, unknown>);
            if (block.rows >= BLOCK_ROWS) await flush();
          }
        },
        async close() {
          await flush();
          return file.close();
        },
        abort: () => file.abort(),
      };
    },
  };
}

const formats = tableFormats.map(throughRegistry);

/** The table and format of a run's file (`answers.parquet`), or null. */
export function tableFormatOf(path: string): { table: TableName; format: TableFormat } | null {
  for (const [index, module] of tableFormats.entries()) {
    const table = runTableNames.find((name) => module.tableFile(name) === path);
    if (table !== undefined) return { table, format: formats[index] as TableFormat };
  }
  return null;
}
