/**
 * The answers table written to Parquet by the chosen writer (hyparquet-writer, through
 * src/load/parquet.ts) and by parquetjs-lite (the design card's original choice, kept only
 * as this baseline). Same rows, same column types, SNAPPY both; rows are read from the
 * replayed answers.csv first, outside the timings.
 */
import { readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import Papa from 'papaparse';
import { createParquetWriter } from '../src/output/formats/parquet.ts';
import { type Row, tables } from '../src/tables/index.ts';
import { localFile } from '../test/helpers/storage.ts';

export interface ParquetWritersInput {
  answersCsv: string;
  outDir: string;
}

export interface WriterFigure {
  ms: number;
  bytes: number;
}

interface ParquetjsWriter {
  appendRow(row: Record<string, unknown>): Promise<void>;
  close(): Promise<void>;
}
interface Parquetjs {
  ParquetSchema: new (fields: Record<string, unknown>) => unknown;
  ParquetWriter: { openFile(schema: unknown, path: string): Promise<ParquetjsWriter> };
}

const parquetjs = createRequire(import.meta.url)('parquetjs-lite') as Parquetjs;
const batch = 5000;

async function answersRows(path: string): Promise<Row<'answers'>[]> {
  const parsed = Papa.parse<Record<string, string>>(await readFile(path, 'utf8'), {
    header: true,
    skipEmptyLines: true,
  });
  const columns = tables.answers.columns;
  return parsed.data.map((record) => {
    const row: Record<string, string | number | null> = {};
    for (const column of columns) {
      const text = record[column.name] ?? '';
      row[column.name] =
        column.nullable && text === '' ? null : column.type === 'integer' ? Number(text) : text;
    }
    return row as Row<'answers'>;
  });
}

async function withHyparquet(rows: readonly Row<'answers'>[], path: string): Promise<WriterFigure> {
  const started = performance.now();
  const writer = await createParquetWriter(...localFile(path), 'answers');
  for (let i = 0; i < rows.length; i += batch) await writer.write(rows.slice(i, i + batch));
  await writer.close();
  return { ms: performance.now() - started, bytes: (await stat(path)).size };
}

async function withParquetjs(rows: readonly Row<'answers'>[], path: string): Promise<WriterFigure> {
  const fields: Record<string, unknown> = {};
  for (const column of tables.answers.columns) {
    fields[column.name] = {
      type: column.type === 'integer' ? 'INT64' : 'UTF8',
      optional: column.nullable,
      compression: 'SNAPPY',
    };
  }
  const started = performance.now();
  const writer = await parquetjs.ParquetWriter.openFile(new parquetjs.ParquetSchema(fields), path);
  for (const row of rows) {
    const record: Record<string, unknown> = {};
    // parquetjs-lite takes a missing key, not null, for an absent optional value.
    for (const [key, value] of Object.entries(row)) if (value !== null) record[key] = value;
    await writer.appendRow(record);
  }
  await writer.close();
  return { ms: performance.now() - started, bytes: (await stat(path)).size };
}

export async function parquetWriters(
  input: ParquetWritersInput,
): Promise<{ rows: number; hyparquet_writer: WriterFigure; parquetjs_lite: WriterFigure }> {
  const rows = await answersRows(input.answersCsv);
  const hyparquet_writer = await withHyparquet(rows, join(input.outDir, 'answers.hyparquet.parquet'));
  const parquetjs_lite = await withParquetjs(rows, join(input.outDir, 'answers.parquetjs-lite.parquet'));
  return { rows: rows.length, hyparquet_writer, parquetjs_lite };
}
