/**
 * A partition's parts: named by run, the newest one found among older parts and files being
 * written, and a part written in scratch, published into the store and read back as the rows
 * that went in (values in the tables' own form).
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { bucketOf } from '../../src/buckets.ts';
import { newestPart, parsePartName, partitionName, publishCurrent } from '../../src/current/index.ts';
import { csvFormat } from '../../src/output/formats/csv.ts';
import type { TableFileWriter, TableFormatModule } from '../../src/output/formats/index.ts';
import { readPart } from '../../src/output/formats/parquet-read.ts';
import { startSandbox } from '../../src/sandbox/index.ts';
import type { Row } from '../../src/tables/index.ts';
import { csvParts } from '../helpers/current.ts';
import { currentOutputIn, prepareStudyRun } from '../helpers/current-runs.ts';
import { withTempDir } from '../helpers/environment.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';
import { awkwardAnswers, responseRow } from '../helpers/samples.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('parts', () => {
  it('are named by run, and the newest Parquet part is the partition', () => {
    expect(parsePartName('part-20260102T000000Z-2.csv')).toEqual({
      runId: '20260102T000000Z-2',
      format: 'csv',
    });
    expect(parsePartName('part-20260102T000000Z.parquet.writing')).toBeNull();
    expect(
      newestPart([
        'part-20260102T000000Z.parquet',
        'part-20260102T000000Z-2.parquet',
        'part-20260103T000000Z.csv',
        'part-20260101T000000Z.parquet',
        'stray.parquet',
      ]),
    ).toBe('part-20260102T000000Z-2.parquet');
    expect(newestPart(['part-20260103T000000Z.csv'])).toBeNull();
  });

  it('are written in scratch, published into the store, and read back row for row', async () => {
    await withTempDir(async (dir) => {
      const output = currentOutputIn(dir);
      const studyId = awkwardAnswers[0]!.study_id;
      const responseIds = [...new Set(awkwardAnswers.map((answer) => answer.response_id))];
      const { context, prepared } = await prepareStudyRun(output, {
        runId: '20260102T000000Z',
        studyId,
        rows: {
          responses: responseIds.map((id) => responseRow(id, { study_id: studyId })),
          answers: awkwardAnswers,
        },
      });
      const folder = `current/answers/${partitionName(bucketOf(studyId))}`;
      const path = `${folder}/part-20260102T000000Z.parquet`;
      // Nothing is in the store before it is published.
      expect(await output.store.read(path)).toBeNull();
      await publishCurrent(context, prepared);
      expect((await readdir(join(dir, 'out', ...folder.split('/')))).sort()).toEqual([
        'part-20260102T000000Z.csv',
        'part-20260102T000000Z.parquet',
      ]);
      const bytes = (await output.store.read(path))!.length;
      const rows: Row<'answers'>[] = [];
      for await (const group of readPart(output.store, path, bytes, 'answers')) rows.push(...group);
      expect(rows).toEqual(awkwardAnswers);
      // Only the columns asked for (and study_id) are read; the others come back null.
      const few: Row<'answers'>[] = [];
      for await (const group of readPart(output.store, path, bytes, 'answers', { columns: ['answer'] }))
        few.push(...group);
      expect(few).toEqual(
        awkwardAnswers.map((row) => ({
          ...Object.fromEntries(Object.keys(row).map((column) => [column, null])),
          answer: row.answer,
          study_id: row.study_id,
        })),
      );
    });
  });
  it("of a bucket new to current/ take the run's blocks: encoded where the format appends them, else from their values", async () => {
    const sandbox = await startSandbox({ seed: 47, studies: 4, responses: 5 });
    try {
      await withTempDir(async (out) => {
        const formats = { output: { formats: ['csv', 'parquet'] } };
        await runAgainst(sandbox, sandboxConfig(sandbox, join(out, 'a'), formats));
        const appended = await csvParts(join(out, 'a', 'test', 'current'));
        expect(Object.keys(appended).length).toBeGreaterThan(0);

        // The same run with a CSV whose files take no encoded block: its parts come from values.
        const open = csvFormat.open.bind(csvFormat);
        let fromValues = 0;
        vi.spyOn(csvFormat as TableFormatModule, 'open').mockImplementation(
          async (storage, table, options) => {
            const { appendEncoded: _, ...file }: TableFileWriter = await open(storage, table, options);
            if (!options.path?.endsWith('.csv') || !options.path.includes('part-')) return file;
            return {
              ...file,
              writeBlock: (buffers) => {
                fromValues += 1;
                return file.writeBlock(buffers);
              },
            };
          },
        );
        await runAgainst(sandbox, sandboxConfig(sandbox, join(out, 'b'), formats));
        expect(fromValues).toBeGreaterThan(0);
        expect(await csvParts(join(out, 'b', 'test', 'current'))).toEqual(appended);
      });
    } finally {
      await sandbox.close();
    }
  });
});
