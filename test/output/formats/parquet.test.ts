import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { ColumnBuffers } from '../../../src/output/formats/column-buffers.ts';
import {
  createParquetWriter,
  defaultRowGroupBytes,
  encodeRowGroup,
  footerVersion1,
  ParquetFile,
  parquetSchema,
} from '../../../src/output/formats/parquet.ts';
import { columnNames, type Row, type TableName, tableNames } from '../../../src/tables/index.ts';
import { withTempDir } from '../../helpers/environment.ts';
import {
  duckdb,
  duckdbTypes,
  expectedTypes,
  normalise,
  normaliseRow,
  readHyparquet,
  readParquetjsLite,
  readParquetWasm,
  readThreeWays,
  rowGroupCount,
  tableRow,
} from '../../helpers/readers.ts';
import { answerRow, awkwardAnswers, awkwardTexts, responseRow } from '../../helpers/samples.ts';
import { localFile, localFolder } from '../../helpers/storage.ts';

const responses = [
  responseRow('r1'),
  responseRow('r2', { response_number: null, updated_at: '2026-01-01T00:00:00.000Z', extra: '{"a":[1,2]}' }),
  responseRow('r3', { summary: null, created_at: '1999-12-31T23:59:59.999Z', answer_count: 2 ** 40 }),
];

describe('Parquet tables', () => {
  it('round-trips awkward values through DuckDB, hyparquet, parquetjs-lite and parquet-wasm, value by value', async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, 'answers.parquet');
      const writer = await createParquetWriter(...localFile(path), 'answers');
      await writer.write(awkwardAnswers);
      await writer.close();

      const fromDuck = await duckdb((query) => query(`select * from read_parquet('${path}')`));
      expect(fromDuck.map(normaliseRow)).toEqual(awkwardAnswers);
      expect((await readHyparquet(path)).map(normaliseRow)).toEqual(awkwardAnswers);
      const answers = (row: Record<string, unknown>) => tableRow('answers', row);
      expect((await readParquetjsLite(path)).rows.map(answers)).toEqual(awkwardAnswers);
      expect((await readParquetWasm(path)).rows.map(answers)).toEqual(awkwardAnswers);
    });
  });

  it('orders string statistics by UTF-8 bytes, so DuckDB skips only the row groups that cannot match', async () => {
    // A character beyond U+FFFF sorts before U+E000 in UTF-16 but after it in UTF-8.
    const texts = [...awkwardTexts, '\uE000 private use', '😀 beyond the BMP', 'Ωmega', 'zzz', 'aaa'];
    const rows = texts.map((text, i) => answerRow(i, text));
    await withTempDir(async (dir) => {
      const path = join(dir, 'answers.parquet');
      const writer = await createParquetWriter(...localFile(path), 'answers', { rowGroupSize: 3 });
      await writer.write(rows);
      await writer.close();

      const metadata = parquetMetadata(new Uint8Array(await readFile(path)).buffer);
      const column = columnNames('answers').indexOf('answer');
      const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
      // Bounds, not values: long strings are cut to a 16-byte prefix (and the maximum raised).
      metadata.row_groups.forEach((group, g) => {
        const values = texts.slice(g * 3, g * 3 + 3).sort(byBytes);
        const statistics = group.columns[column]?.meta_data?.statistics;
        expect(byBytes(String(statistics?.min_value), values[0] as string)).toBeLessThanOrEqual(0);
        expect(byBytes(String(statistics?.max_value), values.at(-1) as string)).toBeGreaterThanOrEqual(0);
        expect(Buffer.from(values[0] as string).subarray(0, 16)).toEqual(
          Buffer.from(String(statistics?.min_value)),
        );
      });
      await duckdb(async (query) => {
        for (const text of texts) {
          const literal = text.replaceAll("'", "''").replaceAll('\0', "' || chr(0) || '");
          const [found] = await query(
            `select count(*) as n from read_parquet('${path}') where answer = '${literal}'`,
          );
          expect([text, Number(found?.n)]).toEqual([text, texts.filter((t) => t === text).length]);
        }
      });
    });
  });

  it('is a format version 1 file with PLAIN columns, which parquetjs-lite (a 1.0 reader) opens with the declared types', async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, 'responses.parquet');
      const writer = await createParquetWriter(...localFile(path), 'responses', { rowGroupSize: 2 });
      await writer.write(responses);
      await writer.close();
      await duckdb(async (query) => {
        const [file] = await query(`select format_version from parquet_file_metadata('${path}')`);
        expect(normalise(file!.format_version)).toBe(1);
        const encodings = await query(`select distinct encodings from parquet_metadata('${path}')`);
        expect(encodings.map((e) => e.encodings)).toEqual(['PLAIN']);
      });
      const lite = await readParquetjsLite(path);
      expect(lite.types).toEqual(expectedTypes('responses', 'parquetjs-lite'));
      expect(lite.rows.map((row) => tableRow('responses', row))).toEqual(responses);
      const wasm = await readParquetWasm(path);
      expect(wasm.types).toEqual(expectedTypes('responses', 'parquet-wasm'));
      expect(wasm.rows.map((row) => tableRow('responses', row))).toEqual(responses);
      expect(await duckdbTypes(path)).toEqual(expectedTypes('responses', 'duckdb'));
    });
  });

  it('refuses to rewrite a footer it does not recognise', () => {
    const footer = (first: number[]) => {
      const meta = [...first, 0x00];
      return new Uint8Array([...meta, meta.length, 0, 0, 0, ...Buffer.from('PAR1')]);
    };
    const v2 = footer([0x15, 0x04]);
    footerVersion1(v2);
    expect([...v2.subarray(0, 2)]).toEqual([0x15, 0x02]);
    expect(() => footerVersion1(footer([0x15, 0x06]))).toThrow(/format version/);
    expect(() => footerVersion1(footer([0x16, 0x04]))).toThrow(/format version/);
    expect(() => footerVersion1(new Uint8Array([0x15, 0x04, 3, 0, 0, 0, 80, 65, 82, 0]))).toThrow();
  });

  it('types timestamps as UTC timestamps, integers as BIGINT, and marks only nullable columns optional', async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, 'responses.parquet');
      const writer = await createParquetWriter(...localFile(path), 'responses', { rowGroupSize: 2 });
      await writer.write(responses);
      expect(await writer.close()).toBe(2);

      await duckdb(async (query) => {
        const described = await query(`describe select * from read_parquet('${path}')`);
        expect(Object.fromEntries(described.map((c) => [c.column_name, c.column_type]))).toEqual({
          response_id: 'VARCHAR',
          study_id: 'VARCHAR',
          link_id: 'VARCHAR',
          response_number: 'BIGINT',
          created_at: 'TIMESTAMP WITH TIME ZONE',
          updated_at: 'TIMESTAMP WITH TIME ZONE',
          summary: 'VARCHAR',
          short_transcript: 'VARCHAR',
          answer_count: 'BIGINT',
          turn_count: 'BIGINT',
          modality: 'VARCHAR',
          extra: 'VARCHAR',
        });
        const schema = await query(
          `select name, repetition_type from parquet_schema('${path}') where name <> 'root'`,
        );
        expect(Object.fromEntries(schema.map((c) => [c.name, c.repetition_type]))).toMatchObject({
          response_id: 'REQUIRED',
          response_number: 'OPTIONAL',
          created_at: 'REQUIRED',
          updated_at: 'OPTIONAL',
          extra: 'OPTIONAL',
        });
        const codecs = await query(`select distinct compression from parquet_metadata('${path}')`);
        expect(codecs.map((c) => c.compression)).toEqual(['SNAPPY']);
        const epoch = await query(
          `select epoch_ms(created_at) as ms from read_parquet('${path}') order by response_id`,
        );
        expect(epoch.map((r) => normalise(r.ms))).toEqual(responses.map((r) => Date.parse(r.created_at)));
        const rows = await query(`select * from read_parquet('${path}') order by response_id`);
        expect(rows.map(normaliseRow)).toEqual(responses);
      });
      expect((await readHyparquet(path)).map(normaliseRow)).toEqual(responses);
    });
  });

  it('cuts a row group by buffered bytes when rows are large, so memory stays bounded', async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, 'answers.parquet');
      const writer = await createParquetWriter(...localFile(path), 'answers');
      // 300 answers of 50 KB: 15 MB of values, far fewer rows than a row group holds.
      const long = (i: number) => `${i}:`.padEnd(50_000, 'x');
      for (let i = 0; i < 300; i++) await writer.write([answerRow(i, long(i))]);
      const groups = await writer.close();
      // 15 MB makes about 15 MB / defaultRowGroupBytes groups; one per row would be wrong too.
      expect(groups).toBeGreaterThanOrEqual(Math.floor(15_000_000 / defaultRowGroupBytes));
      expect(groups).toBeLessThan(300 / 5); // several rows to a group
      expect(await rowGroupCount(path)).toBe(groups);
      const rows = await readHyparquet(path);
      expect(rows).toHaveLength(300);
      expect(rows.map((row) => row.answer)).toEqual(Array.from({ length: 300 }, (_, i) => long(i)));
    });
  });

  it('streams a 120,000-row answers table in row groups of 50,000 rows when the byte cut allows', async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, 'answers.parquet');
      const writer = await createParquetWriter(...localFile(path), 'answers', {
        rowGroupBytes: 64 * 2 ** 20,
      });
      for (let start = 0; start < 120_000; start += 1000) {
        await writer.write(
          Array.from({ length: 1000 }, (_, k) => answerRow(start + k, `answer ${start + k}`)),
        );
      }
      expect(await writer.close()).toBe(3);
      expect(await rowGroupCount(path)).toBe(3);
      await duckdb(async (query) => {
        const [stats] = await query(
          `select count(*) as n, count(distinct answer_id) as ids, sum(position) as positions,
                  count(concept_id) as concepts from read_parquet('${path}')`,
        );
        expect(normaliseRow(stats!)).toEqual({
          n: 120_000,
          ids: 120_000,
          positions: 12_000 * 55,
          concepts: 60_000,
        });
        const [last] = await query(`select * from read_parquet('${path}') where answer_id = 'a-119999'`);
        expect(normaliseRow(last!)).toEqual(answerRow(119_999, 'answer 119999'));
      });
    });
  });

  it.each(tableNames)(
    'writes an empty %s table that readers open with its columns',
    async (table: TableName) => {
      await withTempDir(async (dir) => {
        const path = join(dir, `${table}.parquet`);
        expect(await (await createParquetWriter(...localFile(path), table)).close()).toBe(0);
        await duckdb(async (query) => {
          const described = await query(`describe select * from read_parquet('${path}')`);
          expect(described.map((c) => c.column_name)).toEqual(columnNames(table));
          const [count] = await query(`select count(*) as n from read_parquet('${path}')`);
          expect(normalise(count!.n)).toBe(0);
        });
        expect(await readHyparquet(path)).toEqual([]);
        // Rust's parquet crate reads the footer's Thrift strictly: an empty row-group list must
        // still say its elements are structs.
        const wasm = await readParquetWasm(path);
        expect(wasm.rows).toEqual([]);
        expect(Object.keys(wasm.types)).toEqual(columnNames(table));
      });
    },
  );

  it('refuses a null in a required column instead of writing a corrupt file', async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, 'answers.parquet');
      const writer = await createParquetWriter(...localFile(path), 'answers', { rowGroupSize: 1 });
      const broken = { ...answerRow(1, 'x'), question: null } as unknown as Row<'answers'>;
      await expect(writer.write([broken])).rejects.toMatchObject({
        code: 'E_RUN',
        message: expect.stringContaining('question'),
        context: { file: path },
      });
      await writer.abort();
    });
  });

  it('derives its schema from the table declaration', () => {
    const schema = parquetSchema('media');
    expect(schema[0]).toEqual({ name: 'root', num_children: columnNames('media').length });
    expect(schema.slice(1).map((e) => e.name)).toEqual(columnNames('media'));
    expect(schema.find((e) => e.name === 'bytes')).toMatchObject({
      type: 'INT64',
      repetition_type: 'OPTIONAL',
    });
    expect(schema.find((e) => e.name === 'kind')).toMatchObject({
      type: 'BYTE_ARRAY',
      repetition_type: 'REQUIRED',
    });
  });
});

describe('Parquet row groups encoded once', () => {
  it("keep their statistics in bytes of their own, not in slices of Buffer's shared pool", () => {
    const buffered = new ColumnBuffers('answers', 'test');
    for (const row of awkwardAnswers) buffered.add(row);
    const group = encodeRowGroup('answers', buffered.values, buffered.rows);
    const bounds = group.metadata.columns.flatMap((chunk) => {
      const statistics = chunk.meta_data?.statistics;
      return [statistics?.min_value, statistics?.max_value].filter((v) => v instanceof Uint8Array);
    });
    expect(bounds.length).toBeGreaterThan(6); // the string columns' min and max
    // A slice of the pool would keep its whole 8 KiB alive for as long as the footer needs it.
    for (const bound of bounds) expect(bound.buffer.byteLength).toBe(bound.byteLength);
  });

  it('make two files where they land at other offsets, each read back by three readers', async () => {
    await withTempDir(async (dir) => {
      const rows = awkwardAnswers.map((row, i) => ({ ...row, answer: `${row.answer} ${'x'.repeat(i * 7)}` }));
      const [first, second] = [rows.slice(0, 9), rows.slice(9)];
      const buffers = (part: typeof rows) => {
        const buffered = new ColumnBuffers('answers', 'test');
        for (const row of part) buffered.add(row);
        return buffered;
      };
      // The table's file: a group written through write() first, so the shared one lands further in.
      const tablePath = join(dir, 'answers.parquet');
      const table = await createParquetWriter(...localFile(tablePath), 'answers');
      const ownFirst = await table.writeGroup(buffers(first));
      const shared = await table.writeGroup(buffers(second));
      await table.close();
      // A second file that takes only the second group, at offset 4.
      const ownPath = join(dir, 'own.parquet');
      const own = await ParquetFile.open(localFolder(dir), 'own.parquet', 'answers');
      await own.append(shared);
      await own.close();
      expect(ownFirst.bytes.length).toBeGreaterThan(0);

      for (const [path, expected] of [
        [tablePath, rows],
        [ownPath, second],
      ] as const) {
        for (const [reader, read] of Object.entries(await readThreeWays(path, 'answers'))) {
          expect(read, `${reader}: ${path}`).toEqual(expected);
        }
      }
      expect(await rowGroupCount(tablePath)).toBe(2);
      expect(await rowGroupCount(ownPath)).toBe(1);
    });
  });
});
