/** Independent readers for the files the load stage writes: DuckDB and hyparquet for Parquet, papaparse for CSV. */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import Papa from 'papaparse';

export async function withTempDir<T>(use: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'study-export-load-'));
  try {
    return await use(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Runs queries against one in-memory DuckDB; results as JSON-safe objects (bigint and timestamps as strings). */
export async function duckdb<T>(
  use: (query: (sql: string) => Promise<Record<string, unknown>[]>) => Promise<T>,
) {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    return await use(async (sql) => (await connection.runAndReadAll(sql)).getRowObjectsJS());
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

export async function readHyparquet(path: string): Promise<Record<string, unknown>[]> {
  return parquetReadObjects({ file: await asyncBufferFromFile(path) });
}

export async function rowGroupCount(path: string): Promise<number> {
  return (await parquetMetadataAsync(await asyncBufferFromFile(path))).row_groups.length;
}

/** The CSV file's text and its records parsed back with papaparse. */
export async function readCsv(path: string): Promise<{ text: string; records: string[][] }> {
  const text = await readFile(path, 'utf8');
  const parsed = Papa.parse<string[]>(text.replace(/^\ufeff/, ''), { skipEmptyLines: false });
  // The file ends with a line end, which papaparse reads as one trailing empty record.
  const records = parsed.data.filter(
    (r, i) => !(i === parsed.data.length - 1 && r.length === 1 && r[0] === ''),
  );
  return { text, records };
}
