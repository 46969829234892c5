/**
 * When a bucket of the current dataset is prepared: once every study of the run in it has
 * ended, and, where all of them found nothing, only once the run is known to commit. The parts
 * it prepares hold the staged rows (read back with hyparquet).
 */
import { join } from 'node:path';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/buckets.ts';
import {
  type CurrentContext,
  CurrentPreparation,
  CurrentStaging,
  partitionName,
} from '../../src/current/index.ts';
import { studyRow } from '../../src/transform/index.ts';
import { currentOutputIn } from '../helpers/current-runs.ts';
import { withTempDir } from '../helpers/environment.ts';
import { study } from '../helpers/fixtures.ts';
import { responseRow } from '../helpers/samples.ts';

async function contextIn(dir: string): Promise<CurrentContext> {
  return {
    ...currentOutputIn(dir),
    runId: '20260102T000000Z',
    staging: await CurrentStaging.open(join(dir, 'staging')),
  };
}

/** The study's rows staged as its export would stage them. */
async function stageStudy(context: CurrentContext, responses: string[]): Promise<void> {
  const stage = context.staging.forStudy(study.id);
  await stage.write('studies', [studyRow(study)]);
  await stage.write(
    'responses',
    responses.map((id) => responseRow(id, { study_id: study.id, link_id: study.link_id })),
  );
  await stage.close();
}

const outcome = (responses: number, since: string | null = null) => ({
  study_id: study.id,
  since,
  lossless: true,
  responses,
});

describe('CurrentPreparation', () => {
  it('prepares a bucket once its studies have ended, with the staged rows in its parts', async () => {
    await withTempDir(async (dir) => {
      const context = await contextIn(dir);
      const preparation = new CurrentPreparation(context, [study.id]);
      // No part yet and no Parquet copy wanted here: the bucket is merged from the staged rows.
      expect(await preparation.begin(study.id, 'coffee-habits')).not.toBeNull();
      await stageStudy(context, ['r-1', 'r-2']);
      expect(preparation.endsBucket(study.id)).toBe(true);
      preparation.add(outcome(2));
      const [prepared] = await preparation.done();
      expect(prepared?.bucket).toBe(bucketOf(study.id));
      expect(prepared?.studyIds).toEqual([study.id]);
      const studies = prepared!.parts
        .flatMap((part) => part.files)
        .find((file) => file.target.startsWith('current/studies/') && file.target.endsWith('.parquet'));
      expect(studies?.target).toBe(
        `current/studies/${partitionName(bucketOf(study.id))}/part-20260102T000000Z.parquet`,
      );
      const rows = await parquetReadObjects({ file: await asyncBufferFromFile(studies!.local) });
      expect(rows.map((row) => row.link_id)).toEqual([study.link_id]);
      expect(prepared!.wide.map((sheet) => sheet.studyId)).toEqual([study.id]);
      await preparation.discard();
    });
  });

  it('leaves a bucket whose studies found nothing unprepared when the run commits nothing', async () => {
    await withTempDir(async (dir) => {
      const context = await contextIn(dir);
      const preparation = new CurrentPreparation(context, [study.id]);
      await preparation.begin(study.id, 'coffee-habits');
      await stageStudy(context, []);
      preparation.endsBucket(study.id);
      preparation.add(outcome(0, '2026-01-01T00:00:00.000Z'));
      const [unprepared] = await preparation.done({ unchanged: true });
      expect(unprepared?.parts).toEqual([]);
      expect([...(unprepared?.rewrite ?? [])]).toEqual([]);
      expect(unprepared?.partitions.size).toBeGreaterThan(0);
    });
  });

  it('prepares that bucket after all once the run is to be committed', async () => {
    await withTempDir(async (dir) => {
      const context = await contextIn(dir);
      const preparation = new CurrentPreparation(context, [study.id]);
      await preparation.begin(study.id, 'coffee-habits');
      await stageStudy(context, []);
      preparation.endsBucket(study.id);
      preparation.add(outcome(0, '2026-01-01T00:00:00.000Z'));
      const [prepared] = await preparation.done();
      expect(prepared?.parts.length).toBeGreaterThan(0);
      expect(prepared?.rewrite.has('studies')).toBe(true);
      await preparation.discard();
    });
  });
});
