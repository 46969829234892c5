import { access, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTableWriters } from '../../src/load/table-writers.ts';
import { columnNames, tableNames } from '../../src/load/tables.ts';
import { localFolder } from '../storage/helpers.ts';
import { duckdb, readCsv, rowGroupCount, withTempDir } from './readers.ts';
import { answerRow, responseRow } from './samples.ts';

const csv = { bom: false, escape_formulae: true };

describe('createTableWriters', () => {
  it('creates every table in every format, with headers, even when empty', async () => {
    await withTempDir(async (dir) => {
      const writers = await createTableWriters(localFolder(dir), { formats: ['csv', 'parquet'], csv });
      await writers.write('responses', [responseRow('r1'), responseRow('r2')]);
      const summary = await writers.close();

      expect(summary.map((s) => s.table)).toEqual(tableNames);
      expect(summary.find((s) => s.table === 'responses')).toEqual({
        table: 'responses',
        rows: 2,
        files: ['responses.csv', 'responses.parquet'],
      });
      expect((await readdir(dir)).sort()).toEqual(
        tableNames.flatMap((t) => [`${t}.csv`, `${t}.parquet`]).sort(),
      );
      for (const table of tableNames) {
        expect((await readCsv(join(dir, `${table}.csv`))).records[0]).toEqual(columnNames(table));
      }
      await duckdb(async (query) => {
        const [count] = await query(
          `select count(*) as n from read_parquet('${join(dir, 'media.parquet')}')`,
        );
        expect(Number(count!.n)).toBe(0);
      });
    });
  });

  it('serializes concurrent writes to one table and keeps their order', async () => {
    await withTempDir(async (dir) => {
      const writers = await createTableWriters(localFolder(dir), {
        formats: ['csv', 'parquet'],
        csv,
        rowGroupSize: 700,
      });
      const batches = Array.from({ length: 30 }, (_, b) =>
        Array.from({ length: 100 }, (_, k) => answerRow(b * 100 + k, `batch ${b} row ${k}`)),
      );
      await Promise.all(batches.map((batch) => writers.write('answers', batch)));
      const summary = await writers.close();
      expect(summary.find((s) => s.table === 'answers')?.rows).toBe(3000);

      const { records } = await readCsv(join(dir, 'answers.csv'));
      expect(records.slice(1).map((r) => r[1])).toEqual(batches.flat().map((r) => r.answer_id));
      const parquet = join(dir, 'answers.parquet');
      expect(await rowGroupCount(parquet)).toBe(5);
      await duckdb(async (query) => {
        const ids = await query(`select answer_id from read_parquet('${parquet}')`);
        expect(ids.map((r) => r.answer_id)).toEqual(batches.flat().map((r) => r.answer_id));
      });
    });
  });

  it('writes only the formats asked for', async () => {
    await withTempDir(async (dir) => {
      const writers = await createTableWriters(localFolder(dir), { formats: ['parquet'], csv });
      const summary = await writers.close();
      expect(summary.every((s) => s.files.length === 1 && s.files[0]!.endsWith('.parquet'))).toBe(true);
      expect((await readdir(dir)).every((f) => f.endsWith('.parquet'))).toBe(true);
    });
  });

  it('removes its files on abort', async () => {
    await withTempDir(async (dir) => {
      const writers = await createTableWriters(localFolder(dir), { formats: ['csv', 'parquet'], csv });
      await writers.write('answers', [answerRow(1, 'x')]);
      await writers.abort();
      expect(await readdir(dir)).toEqual([]);
    });
  });

  it('fails with a plain SystemError naming the file when the folder cannot be written, leaving nothing behind', async () => {
    await withTempDir(async (dir) => {
      const missing = join(dir, 'does-not-exist');
      await expect(
        createTableWriters(localFolder(missing), { formats: ['csv', 'parquet'], csv }),
      ).rejects.toMatchObject({
        code: 'E_SYSTEM',
        errno: 'ENOENT',
        message: `no such file or folder: ${join(missing, 'studies.csv')}`,
        context: { file: join(missing, 'studies.csv') },
      });
      await expect(access(missing)).rejects.toThrow();
      expect(await readdir(dir)).toEqual([]);
    });
  });
});
