/** Reading the current dataset back the way an analyst does: DuckDB over the hive partitions. */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type TableName, tableNames, tables } from '../../src/load/tables.ts';
import { duckdb } from '../load/readers.ts';

/** Every row of every table of current/ (or of a run's files), sorted by primary key, as JSON text. */
export async function currentTables(
  root: string,
  layout: 'current' | 'run' = 'current',
): Promise<Record<TableName, string[]>> {
  return duckdb(async (query) => {
    const result = {} as Record<TableName, string[]>;
    for (const table of tableNames) {
      const source =
        layout === 'current'
          ? `read_parquet('${join(root, table)}/*/*.parquet', hive_partitioning = true)`
          : `read_parquet('${join(root, `${table}.parquet`)}')`;
      const columns = tables[table].columns.map((column) => `"${column.name}"`).join(', ');
      const order = tables[table].primaryKey.map((key) => `"${key}"`).join(', ');
      const rows = await query(`select ${columns} from ${source} order by ${order}`).catch((error: Error) => {
        // No partition yet: DuckDB finds no file for the pattern.
        if (/No files found/.test(error.message)) return [];
        throw error;
      });
      result[table] = rows.map((row) =>
        JSON.stringify(row, (_key, value) => (typeof value === 'bigint' ? Number(value) : value)),
      );
    }
    return result;
  });
}

/** The file names in each partition of a table of current/. */
export async function partitions(currentDir: string, table: TableName): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  let names: string[];
  try {
    names = await readdir(join(currentDir, table));
  } catch {
    return out;
  }
  for (const name of names) out[name] = (await readdir(join(currentDir, table, name))).sort();
  return out;
}
