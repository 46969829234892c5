/**
 * A partition's parts: named by run, the newest one found among older parts and files being
 * written, and a part written in scratch, published into the store and read back as the rows
 * that went in (values in the tables' own form).
 */
import { mkdtemp, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  createPartWriter,
  newestPart,
  parsePartName,
  partFileName,
  partitionName,
  publishPart,
} from '../../src/current/parts.ts';
import { readPart } from '../../src/output/formats/parquet-read.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import type { Row } from '../../src/tables/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { awkwardAnswers } from '../helpers/samples.ts';

describe('parts', () => {
  it('are named by run, and the newest Parquet part is the partition', () => {
    expect(partFileName('20260102T000000Z', 'parquet')).toBe('part-20260102T000000Z.parquet');
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
      const store = new LocalStorage(join(dir, 'out'));
      const writer = await createPartWriter('answers', 7, '20260102T000000Z', {
        formats: ['parquet', 'csv'],
        csv: { bom: false, escape_formulae: true },
        dir: await mkdtemp(join(dir, 'scratch-')),
      });
      await writer.write(awkwardAnswers);
      const part = await writer.finish();
      // Nothing is in the store before it is published.
      expect(
        await store.read(`current/answers/${partitionName(7)}/part-20260102T000000Z.parquet`),
      ).toBeNull();
      const published = await publishPart(store, part);
      expect(published.sort()).toEqual([
        `current/answers/${partitionName(7)}/part-20260102T000000Z.csv`,
        `current/answers/${partitionName(7)}/part-20260102T000000Z.parquet`,
      ]);
      const folder = join(dir, 'out', 'current', 'answers', partitionName(7));
      expect((await readdir(folder)).sort()).toEqual([
        'part-20260102T000000Z.csv',
        'part-20260102T000000Z.parquet',
      ]);
      const path = `current/answers/${partitionName(7)}/part-20260102T000000Z.parquet`;
      const bytes = (await store.read(path))!.length;
      const rows: Row<'answers'>[] = [];
      for await (const group of readPart(store, path, bytes, 'answers')) rows.push(...group);
      expect(rows).toEqual(awkwardAnswers);
    });
  });
});
