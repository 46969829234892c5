/**
 * A bucket's merge on a real folder: its new responses part holds the bucket's previous rows
 * and the run's, one copy of each response (the run's), and, for a full export without loss,
 * only the run's rows of that study; parts read back with hyparquet.
 */
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/buckets.ts';
import { prepareBucket } from '../../src/current/bucket.ts';
import { startBucket } from '../../src/current/bucket-start.ts';
import type { CurrentContext } from '../../src/current/context.ts';
import { createPartWriter, publishPart } from '../../src/current/parts.ts';
import { CurrentStaging } from '../../src/current/staging.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { studyRow } from '../../src/transform/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { study } from '../helpers/fixtures.ts';
import { responseRow } from '../helpers/samples.ts';

const csv = { bom: false, escape_formulae: true };
const row = (id: string, summary: string) =>
  responseRow(id, { study_id: study.id, link_id: study.link_id, summary });

async function merged(since: string | null): Promise<Record<string, unknown>[]> {
  return withTempDir(async (dir) => {
    const store = new LocalStorage(join(dir, 'out'));
    const bucket = bucketOf(study.id);
    // The bucket as an earlier run left it: two responses of the study.
    const before = await createPartWriter('responses', bucket, '20260101T000000Z', {
      formats: ['parquet', 'csv'],
      csv,
      dir: await mkdtemp(join(dir, 'before-')),
    });
    await before.write([row('r-1', 'old'), row('r-2', 'kept')]);
    await publishPart(store, await before.finish());
    const context: CurrentContext = {
      store,
      name: 'test',
      formats: ['parquet', 'csv'],
      csv,
      scratchDir: dir,
      runId: '20260102T000000Z',
      staging: await CurrentStaging.open(join(dir, 'staging')),
    };
    const stage = context.staging.forStudy(study.id);
    await stage.write('studies', [studyRow(study)]);
    await stage.write('responses', [row('r-1', 'new'), row('r-3', 'added')]);
    await stage.close();
    const start = await startBucket(context, bucket, { copy: false });
    const prepared = await prepareBucket(
      context,
      [{ study_id: study.id, since, lossless: true, responses: 2 }],
      start,
      new Map(),
    );
    expect(prepared.rewrite.has('responses')).toBe(true);
    const file = prepared.parts
      .flatMap((part) => part.files)
      .find((f) => f.target.startsWith('current/responses/') && f.target.endsWith('.parquet'));
    expect(file?.target).toContain('part-20260102T000000Z.parquet');
    const rows = await parquetReadObjects({ file: await asyncBufferFromFile(file!.local) });
    return rows
      .map((r) => ({ id: r.response_id, summary: r.summary }))
      .sort((a, b) => String(a.id).localeCompare(String(b.id)));
  });
}

describe('a bucket merged', () => {
  it('keeps the responses the run did not see, and the run copy of those it did', async () => {
    expect(await merged('2026-01-01T00:00:00.000Z')).toEqual([
      { id: 'r-1', summary: 'new' },
      { id: 'r-2', summary: 'kept' },
      { id: 'r-3', summary: 'added' },
    ]);
  });

  it("holds only the run's rows of a study the run exported whole without loss", async () => {
    expect(await merged(null)).toEqual([
      { id: 'r-1', summary: 'new' },
      { id: 'r-3', summary: 'added' },
    ]);
  });
});
