/** Payloads through the transform into the table writers, read back by independent readers. */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTableWriters } from '../../src/output/table-writers.ts';
import { columnNames, type Row, type TableName } from '../../src/tables/index.ts';
import { QuestionRegistry, responseRows, studyRow } from '../../src/transform/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { detail, listed, outcome, signed, study, turn } from '../helpers/fixtures.ts';
import { duckdb, readCsv, readHyparquet } from '../helpers/readers.ts';
import { localFolder } from '../helpers/storage.ts';

const normalise = (row: Record<string, unknown>) =>
  Object.fromEntries(
    Object.entries(row).map(([k, v]) => [
      k,
      typeof v === 'bigint' ? Number(v) : v instanceof Date ? v.toISOString() : (v ?? null),
    ]),
  );

describe('transform into tables', () => {
  it('writes what the transform produced, in both formats, with no signed URL in any file', async () => {
    const transcript = [
      turn({ answer_id: null, moderator: 'Welcome', user: '' }),
      turn({ audio: signed('r-1/2.mp3') }),
    ];
    const rows = responseRows({ study, listed: listed(), detail: detail(transcript), media: [outcome()] });
    const registry = new QuestionRegistry();
    const expected: { [T in TableName]: Row<T>[] } = {
      studies: [studyRow(study)],
      responses: [rows.response],
      questions: registry.add(rows.questions),
      answers: rows.answers,
      transcript: rows.transcript,
      attributes: rows.attributes,
      media: rows.media,
      deletions: [],
    };

    await withTempDir(async (dir) => {
      const writers = await createTableWriters(localFolder(dir), {
        formats: ['csv', 'parquet'],
        csv: { bom: false, escape_formulae: true },
      });
      const writeTable = <T extends TableName>(table: T) => writers.write(table, expected[table]);
      await Promise.all((Object.keys(expected) as TableName[]).map(writeTable));
      const summary = await writers.close();

      await duckdb(async (query) => {
        for (const { table, rows: count, files } of summary) {
          expect(count).toBe(expected[table].length);
          const parquet = join(dir, files.find((f) => f.endsWith('.parquet'))!);
          const fromDuck = await query(`select * from read_parquet('${parquet}')`);
          expect(fromDuck.map(normalise)).toEqual(expected[table]);
          expect((await readHyparquet(parquet)).map(normalise)).toEqual(expected[table]);

          const { records } = await readCsv(join(dir, `${table}.csv`));
          expect(records[0]).toEqual(columnNames(table));
          expect(records).toHaveLength(expected[table].length + 1);
          for (const file of files)
            expect((await readFile(join(dir, file))).includes('X-Signature')).toBe(false);
        }
      });
      const [transcriptHeader, intro, answered] = (await readCsv(join(dir, 'transcript.csv'))).records;
      const column = (name: string) => transcriptHeader!.indexOf(name);
      expect(intro![column('answer_id')]).toBe('');
      expect(answered![column('audio_file')]).toBe('coffee-habits/r-1/2-audio.mp3');
    });
  });
});
