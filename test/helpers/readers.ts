/**
 * Independent readers for the files the load stage writes: DuckDB, hyparquet, parquetjs-lite
 * and parquet-wasm (with apache-arrow) for Parquet, papaparse for CSV.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { tableFromIPC } from 'apache-arrow';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import Papa from 'papaparse';
import { readParquet } from 'parquet-wasm/node';
import { formulaPattern } from '../../src/output/formats/csv.ts';
import { type ColumnType, columnNames, type TableName, tables } from '../../src/tables/index.ts';

/** A value read back, in the row convention: numbers for integers, ISO strings for timestamps. */
export function normalise(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (value instanceof Date) return value.toISOString();
  return value ?? null;
}

/** A row read back, every value in the row convention. */
export const normaliseRow = (row: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(row).map(([key, value]) => [key, normalise(value)]));

/** A table's Parquet file as hyparquet, parquetjs-lite and DuckDB each read it, in the row convention. */
export async function readThreeWays(path: string, table: TableName): Promise<Record<string, unknown[]>> {
  return {
    hyparquet: (await readHyparquet(path)).map(normaliseRow),
    'parquetjs-lite': (await readParquetjsLite(path)).rows.map((row) => tableRow(table, row)),
    duckdb: (await duckdb((query) => query(`select * from read_parquet('${path}')`))).map(normaliseRow),
  };
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

/** What a Parquet reader returns: rows, and each column's type as that reader names it. */
export interface ParquetRead {
  rows: Record<string, unknown>[];
  /** Column name -> the reader's type, with "?" appended when the column is nullable. */
  types: Record<string, string>;
}

/** parquetjs-lite's reader (the Parquet 1.0 reader of the design card). Absent keys are nulls. */
export async function readParquetjsLite(path: string): Promise<ParquetRead> {
  const reader = await parquetjs.ParquetReader.openFile(path);
  try {
    const fields = reader.getSchema().fields;
    const names = Object.keys(fields);
    const rows: Record<string, unknown>[] = [];
    const cursor = reader.getCursor();
    for (let row = await cursor.next(); row; row = await cursor.next()) {
      rows.push(Object.fromEntries(names.map((name) => [name, row[name] ?? null])));
    }
    const types = Object.fromEntries(
      Object.entries(fields).map(([name, f]) => [
        name,
        `${f.primitiveType}${f.originalType ? `/${f.originalType}` : ''}${f.repetitionType === 'OPTIONAL' ? '?' : ''}`,
      ]),
    );
    return { rows, types };
  } finally {
    await reader.close();
  }
}

interface ParquetjsField {
  primitiveType: string;
  originalType?: string;
  repetitionType: string;
}
interface ParquetjsReader {
  getSchema(): { fields: Record<string, ParquetjsField> };
  getCursor(): { next(): Promise<Record<string, unknown> | null> };
  close(): Promise<void>;
}
/** parquetjs-lite ships no types; the little used here. */
const parquetjs = createRequire(import.meta.url)('parquetjs-lite') as {
  ParquetReader: { openFile(path: string): Promise<ParquetjsReader> };
};

/** parquet-wasm (Rust's parquet crate) into an Arrow table read by apache-arrow. */
export async function readParquetWasm(path: string): Promise<ParquetRead> {
  const wasmTable = readParquet(new Uint8Array(await readFile(path)));
  const table = tableFromIPC(wasmTable.intoIPCStream());
  const rows = table.toArray().map((row) => ({ ...(row.toJSON() as Record<string, unknown>) }));
  const types = Object.fromEntries(
    table.schema.fields.map((f) => [f.name, `${String(f.type)}${f.nullable ? '?' : ''}`]),
  );
  return { rows, types };
}

/**
 * A Parquet value in the row convention of src/tables/index.ts: integers as numbers,
 * timestamps as ISO strings (readers give a Date, or apache-arrow epoch milliseconds), null
 * for a missing value.
 */
export function rowValue(type: ColumnType, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (type === 'integer') return Number(value as number | bigint);
  if (type === 'timestamp') return new Date(value instanceof Date ? value : Number(value)).toISOString();
  return value;
}

/** A row read back by any Parquet reader, in the row convention of the table's declaration. */
export function tableRow(table: TableName, row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(tables[table].columns.map((c) => [c.name, rowValue(c.type, row[c.name])]));
}

/** Each reader's name for the type a declared column must have ("?" when nullable). */
export const declaredParquetTypes: Record<
  'duckdb' | 'parquetjs-lite' | 'parquet-wasm',
  Record<ColumnType, string>
> = {
  duckdb: {
    string: 'VARCHAR',
    json: 'VARCHAR',
    integer: 'BIGINT',
    boolean: 'BOOLEAN',
    timestamp: 'TIMESTAMP WITH TIME ZONE',
  },
  'parquetjs-lite': {
    string: 'BYTE_ARRAY/UTF8',
    json: 'BYTE_ARRAY/UTF8',
    integer: 'INT64',
    boolean: 'BOOLEAN',
    timestamp: 'INT64/TIMESTAMP_MICROS',
  },
  'parquet-wasm': {
    string: 'Utf8',
    json: 'Utf8',
    integer: 'Int64',
    boolean: 'Bool',
    timestamp: 'Timestamp<MICROSECOND, UTC>',
  },
};

/** The types a reader must report for a table's columns, nullable ones marked "?" (not DuckDB's). */
export function expectedTypes(
  table: TableName,
  reader: keyof typeof declaredParquetTypes,
): Record<string, string> {
  return Object.fromEntries(
    tables[table].columns.map((c) => [
      c.name,
      declaredParquetTypes[reader][c.type] + (c.nullable && reader !== 'duckdb' ? '?' : ''),
    ]),
  );
}

/** Column name -> type as DuckDB describes the file. */
export async function duckdbTypes(path: string): Promise<Record<string, string>> {
  return duckdb(async (query) => {
    const described = await query(`describe select * from read_parquet('${path}')`);
    return Object.fromEntries(described.map((c) => [String(c.column_name), String(c.column_type)]));
  });
}

/** A row-convention value as our CSV writer writes the cell (formula escape included). */
function csvCell(value: unknown, escapeFormulae: boolean): string {
  if (value === null) return '';
  const text = String(value);
  return escapeFormulae && formulaPattern.test(text) ? `'${text}` : text;
}

/**
 * Reads `<table>.parquet` with DuckDB, hyparquet, parquetjs-lite and parquet-wasm and
 * compares every cell with `<table>.csv` (papaparse), and every column's type with the
 * declaration. Returns what disagrees, named by reader, row and column; [] when all agree.
 */
export async function parquetDisagreements(
  runDir: string,
  table: TableName,
  options: { escapeFormulae: boolean },
): Promise<string[]> {
  const path = join(runDir, `${table}.parquet`);
  const [header, ...records] = (await readCsv(join(runDir, `${table}.csv`))).records;
  const names = columnNames(table);
  const problems: string[] = [];
  if (header?.join(',') !== names.join(',')) problems.push(`${table}.csv: header ${header?.join(',')}`);
  const fromDuck = await duckdb((query) => query(`select * from read_parquet('${path}')`));
  const lite = await readParquetjsLite(path);
  const wasm = await readParquetWasm(path);
  const readers: [string, Record<string, unknown>[]][] = [
    ['duckdb', fromDuck],
    ['hyparquet', await readHyparquet(path)],
    ['parquetjs-lite', lite.rows],
    ['parquet-wasm', wasm.rows],
  ];
  for (const [reader, rows] of readers) {
    if (rows.length !== records.length)
      problems.push(`${reader}: ${rows.length} rows, CSV ${records.length}`);
    rows.forEach((row, i) => {
      const cells = names.map((n) => csvCell(tableRow(table, row)[n], options.escapeFormulae));
      names.forEach((name, j) => {
        if (cells[j] !== records[i]?.[j]) {
          problems.push(
            `${reader}: ${table} row ${i + 1} ${name}: ${JSON.stringify(cells[j])} vs CSV ${JSON.stringify(records[i]?.[j])}`,
          );
        }
      });
    });
  }
  const typeChecks: [string, Record<string, string>, Record<string, string>][] = [
    ['duckdb', await duckdbTypes(path), expectedTypes(table, 'duckdb')],
    ['parquetjs-lite', lite.types, expectedTypes(table, 'parquetjs-lite')],
    ['parquet-wasm', wasm.types, expectedTypes(table, 'parquet-wasm')],
    ['hyparquet', await hyparquetValueTypes(path, table), hyparquetDeclared(table)],
  ];
  for (const [reader, actual, expected] of typeChecks) {
    for (const [column, type] of Object.entries(expected)) {
      // hyparquet reports the JS type of values: a column with no value has none.
      if (actual[column] !== type && !(reader === 'hyparquet' && actual[column] === undefined)) {
        problems.push(`${reader}: ${table}.${column} is ${actual[column]}, declared ${type}`);
      }
    }
  }
  return problems;
}

const hyparquetTypes: Record<ColumnType, string> = {
  string: 'string',
  json: 'string',
  integer: 'bigint',
  boolean: 'boolean',
  timestamp: 'Date',
};
function hyparquetDeclared(table: TableName): Record<string, string> {
  return Object.fromEntries(tables[table].columns.map((c) => [c.name, hyparquetTypes[c.type]]));
}
/** The JS types of the values hyparquet returns, per column (one type per column, or "mixed"). */
async function hyparquetValueTypes(path: string, table: TableName): Promise<Record<string, string>> {
  const types: Record<string, string> = {};
  for (const row of await readHyparquet(path)) {
    for (const column of tables[table].columns) {
      const value = row[column.name];
      if (value === null || value === undefined) continue;
      const type = value instanceof Date ? 'Date' : typeof value;
      const seen = types[column.name];
      types[column.name] = seen === undefined || seen === type ? type : 'mixed';
    }
  }
  return types;
}

/** A field as a spreadsheet's text import splits it: its value, and whether it was quoted. */
export interface SplitField {
  value: string;
  quoted: boolean;
}

/**
 * CSV text split the way LibreOffice Calc's text import does it: on every character of
 * `separators` at once (its default is comma, semicolon and tab), a field that starts with a
 * double quote running to its closing quote ("" inside being one quote). Unlike papaparse,
 * which takes one delimiter, this is what a user who double-clicks a CSV gets.
 */
export function spreadsheetSplit(text: string, separators: string): SplitField[][] {
  const records: SplitField[][] = [];
  let record: SplitField[] = [];
  let i = text.startsWith('\ufeff') ? 1 : 0;
  while (i < text.length) {
    let field: SplitField;
    if (text[i] === '"') {
      let value = '';
      i++;
      for (;;) {
        const close = text.indexOf('"', i);
        if (close < 0) throw new Error(`unclosed quote at ${i}`);
        value += text.slice(i, close);
        if (text[close + 1] === '"') {
          value += '"';
          i = close + 2;
        } else {
          i = close + 1;
          break;
        }
      }
      field = { value, quoted: true };
    } else {
      let end = i;
      while (
        end < text.length &&
        !separators.includes(text[end]!) &&
        text[end] !== '\r' &&
        text[end] !== '\n'
      )
        end++;
      field = { value: text.slice(i, end), quoted: false };
      i = end;
    }
    record.push(field);
    if (i >= text.length) break;
    if (separators.includes(text[i]!)) {
      i++;
      continue;
    }
    if (text[i] === '\r' && text[i + 1] === '\n') i += 2;
    else if (text[i] === '\r' || text[i] === '\n') i++;
    else throw new Error(`unexpected ${JSON.stringify(text[i])} after a quoted field at ${i}`);
    records.push(record);
    record = [];
  }
  if (record.length > 0) records.push(record);
  return records;
}

/**
 * Every problem a spreadsheet would have with a wide CSV: a field holding a separator, quote
 * or line break but not quoted, or a record that Calc's default split (comma, semicolon and
 * tab), or a split on comma with only semicolon or only tab, cuts into a number of columns
 * other than the header's, or into other values than a strict CSV reader's.
 */
export function spreadsheetSplitProblems(text: string): string[] {
  const problems: string[] = [];
  const strict = Papa.parse<string[]>(text.replace(/^\ufeff/, ''), { skipEmptyLines: true }).data;
  for (const separators of [',;\t', ',;', ',\t']) {
    const records = spreadsheetSplit(text, separators);
    const width = records[0]?.length ?? 0;
    records.forEach((record, r) => {
      if (record.length !== width)
        problems.push(
          `split on ${JSON.stringify(separators)}: record ${r} has ${record.length} columns, the header ${width}`,
        );
      record.forEach((field, c) => {
        if (!field.quoted && /[,;\t"\r\n]/.test(field.value))
          problems.push(`record ${r} column ${c}: ${JSON.stringify(field.value)} is not quoted`);
      });
    });
    const values = records.map((record) => record.map((field) => field.value));
    if (JSON.stringify(values) !== JSON.stringify(strict))
      problems.push(`split on ${JSON.stringify(separators)}: values differ from a CSV reader's`);
  }
  return [...new Set(problems)];
}
