import { access, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import Papa from 'papaparse';
import { describe, expect, it } from 'vitest';
import { formulaPattern } from '../../src/output/formats/csv.ts';
import type { StudyCopy } from '../../src/output/formats/index.ts';
import { type EncodedRowGroup, ParquetFile } from '../../src/output/formats/parquet.ts';
import { createTableWriters } from '../../src/output/table-writers.ts';
import { columnNames, type Row, runTableNames } from '../../src/tables/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import {
  duckdb,
  normaliseRow,
  readCsv,
  readHyparquet,
  readThreeWays,
  rowGroupCount,
} from '../helpers/readers.ts';
import { answerRow, awkwardTexts, responseRow } from '../helpers/samples.ts';
import { localFolder } from '../helpers/storage.ts';

const csv = { bom: false, escape_formulae: true };

describe('createTableWriters', () => {
  it('creates every table in every format, with headers, even when empty', async () => {
    await withTempDir(async (dir) => {
      const writers = await createTableWriters(localFolder(dir), { formats: ['csv', 'parquet'], csv });
      await writers.write('responses', [responseRow('r1'), responseRow('r2')]);
      const summary = await writers.close();

      expect(summary.map((s) => s.table)).toEqual(runTableNames);
      expect(summary.find((s) => s.table === 'responses')).toEqual({
        table: 'responses',
        rows: 2,
        files: ['responses.csv', 'responses.parquet'],
      });
      expect((await readdir(dir)).sort()).toEqual(
        runTableNames.flatMap((t) => [`${t}.csv`, `${t}.parquet`]).sort(),
      );
      for (const table of runTableNames) {
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

  describe('per study', () => {
    const studies = ['s-a', 's-b', 's-c'];
    /** Rows of three studies interleaved, as studies exported together write them. */
    const rows = Array.from({ length: 240 }, (_, i) => ({
      ...answerRow(i, `${awkwardTexts[i % awkwardTexts.length]} ${'x'.repeat(i % 40)}`),
      study_id: studies[i % 3] as string,
      answer_id: `a-${i}`,
    }));
    const ofStudy = (study: string) => rows.filter((row) => row.study_id === study);
    const records = (part: typeof rows) => part.map((row) => csvRecordText(row));
    /** A record as papaparse reads it back: every cell text, null as '', formulae escaped. */
    const csvRecordText = (row: (typeof rows)[number]) =>
      columnNames('answers').map((column) => {
        const value = (row as Record<string, unknown>)[column] ?? '';
        const text = String(value);
        return formulaPattern.test(text) ? `'${text}` : text;
      });

    it("keeps one study per row group, CSV and Parquet in one order, and hands each study's bytes to its copy", async () => {
      await withTempDir(async (dir) => {
        const own = new Map<string, { parquet: ParquetFile; csv: string[] }>();
        for (const study of studies) {
          own.set(study, {
            parquet: await ParquetFile.open(localFolder(dir), `${study}.parquet`, 'answers'),
            csv: [],
          });
        }
        // Small row groups, so that the three studies' groups alternate in the table's file.
        const writers = await createTableWriters(localFolder(dir), {
          formats: ['csv', 'parquet'],
          csv,
          perStudy: ['answers'],
          rowGroupBytes: 1500,
        });
        for (const study of studies) {
          const copy = own.get(study)!;
          writers.copyStudy(study, {
            async block(table, format, block) {
              if (table !== 'answers') return;
              if (format === 'parquet') await copy.parquet.append(block.encoded as EncodedRowGroup);
              if (format === 'csv') copy.csv.push(Buffer.from(block.encoded as Uint8Array).toString('utf8'));
            },
          });
        }
        for (let i = 0; i < rows.length; i += 7) await writers.write('answers', rows.slice(i, i + 7));
        // A study's rows still buffered are written by endStudy, so its copy is complete.
        await writers.endStudy('s-b');
        await own.get('s-b')!.parquet.close();
        expect((await readHyparquet(join(dir, 's-b.parquet'))).map(normaliseRow)).toEqual(ofStudy('s-b'));
        await writers.close();
        for (const study of ['s-a', 's-c']) await own.get(study)!.parquet.close();

        // The table: every row, each study's in its order, CSV and Parquet row for row alike.
        const parquet = (await readHyparquet(join(dir, 'answers.parquet'))).map(normaliseRow);
        expect(parquet).toHaveLength(rows.length);
        for (const study of studies)
          expect(parquet.filter((row) => row.study_id === study)).toEqual(ofStudy(study));
        const table = (await readCsv(join(dir, 'answers.csv'))).records;
        expect(table.slice(1)).toEqual(records(parquet as typeof rows));
        await duckdb(async (query) => {
          const groups = await query(
            `select row_group_id, stats_min_value lo, stats_max_value hi from parquet_metadata('${join(dir, 'answers.parquet')}') where path_in_schema = 'study_id'`,
          );
          expect(groups.length).toBeGreaterThan(6);
          for (const group of groups) expect(group.lo).toBe(group.hi);
          expect(new Set(groups.map((group) => group.lo))).toEqual(new Set(studies));
        });

        // Each study's copy: the same rows from the same bytes, read by three readers and papaparse.
        for (const study of studies) {
          const file = join(dir, `${study}.parquet`);
          const expected = ofStudy(study);
          for (const [reader, read] of Object.entries(await readThreeWays(file, 'answers'))) {
            expect(read, `${reader}: ${study}`).toEqual(expected);
          }
          expect(await rowGroupCount(file)).toBeGreaterThan(1);
          const copied = Papa.parse<string[]>(own.get(study)!.csv.join(''), { skipEmptyLines: true }).data;
          expect(copied).toEqual(records(expected));
        }
      });
    });

    it('gives row groups of their own only to studies with a copy: the others share one', async () => {
      await withTempDir(async (dir) => {
        const writers = await createTableWriters(localFolder(dir), {
          formats: ['parquet'],
          csv,
          perStudy: ['answers'],
        });
        const copied: string[] = [];
        writers.copyStudy('s-b', {
          block: async (_table, _format, block) => void copied.push(String(block.values.rows)),
        });
        for (let i = 0; i < rows.length; i += 7) await writers.write('answers', rows.slice(i, i + 7));
        for (const study of studies) await writers.endStudy(study);
        await writers.close();
        const file = join(dir, 'answers.parquet');
        expect(await rowGroupCount(file)).toBe(2);
        expect(copied).toEqual([String(ofStudy('s-b').length)]);
        const parquet = (await readHyparquet(file)).map(normaliseRow);
        for (const study of studies)
          expect(parquet.filter((row) => row.study_id === study)).toEqual(ofStudy(study));
      });
    });

    it("gives studies sharing a copy (a group) one block, written with the group's last study", async () => {
      await withTempDir(async (dir) => {
        const writers = await createTableWriters(localFolder(dir), {
          formats: ['parquet'],
          csv,
          perStudy: ['answers'],
        });
        const copied: number[] = [];
        const copy: StudyCopy = {
          block: async (_table, _format, block) =>
            void copied.push(Number((block.encoded as EncodedRowGroup).metadata.num_rows)),
        };
        writers.copyStudy('s-a', copy, 'bucket-1');
        writers.copyStudy('s-c', copy, 'bucket-1');
        for (let i = 0; i < rows.length; i += 7) await writers.write('answers', rows.slice(i, i + 7));
        // s-a ends first: its rows wait in the group's block until s-c, the group's last, ends.
        await writers.endStudy('s-a', { endsGroup: false });
        expect(copied).toEqual([]);
        await writers.endStudy('s-c', { endsGroup: true });
        expect(copied).toEqual([ofStudy('s-a').length + ofStudy('s-c').length]);
        await writers.endStudy('s-b');
        await writers.close();
        const file = join(dir, 'answers.parquet');
        // The group's row group and the shared one (s-b).
        expect(await rowGroupCount(file)).toBe(2);
        const parquet = (await readHyparquet(file)).map(normaliseRow);
        for (const study of studies)
          expect(parquet.filter((row) => row.study_id === study)).toEqual(ofStudy(study));
      });
    });

    it("refuses a null in a required column, naming the table's file", async () => {
      await withTempDir(async (dir) => {
        const writers = await createTableWriters(localFolder(dir), {
          formats: ['csv', 'parquet'],
          csv,
          perStudy: ['answers'],
        });
        const broken = { ...answerRow(1, 'x'), question: null } as unknown as Row<'answers'>;
        await expect(writers.write('answers', [broken])).rejects.toMatchObject({
          code: 'E_RUN',
          message: expect.stringContaining('question'),
          context: { file: join(dir, 'answers.csv') },
        });
        await writers.abort();
      });
    });

    it("writes the largest study early when the studies together buffer a row group's bytes", async () => {
      await withTempDir(async (dir) => {
        const written: string[] = [];
        const writers = await createTableWriters(localFolder(dir), {
          formats: ['parquet'],
          csv,
          perStudy: ['answers'],
          rowGroupBytes: 10_000,
        });
        for (const study of studies) {
          writers.copyStudy(study, { block: async () => void written.push(study) });
        }
        // Each study alone stays under 10 000 bytes (about 4 000); the three together pass it.
        const big = (study: string, i: number) => ({ ...answerRow(i, 'y'.repeat(700)), study_id: study });
        for (let i = 0; i < 5; i++)
          await writers.write(
            'answers',
            studies.map((study) => big(study, i)),
          );
        expect(written.length).toBeGreaterThan(0);
        await writers.close();
        expect((await readHyparquet(join(dir, 'answers.parquet'))).length).toBe(15);
      });
    });
  });
});
