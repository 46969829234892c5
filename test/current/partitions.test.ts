/**
 * A bucket's partitions as a run finds them, folder by folder or from one listing of current/
 * (a run of many studies): the same files, each partition's newest part the one a merge reads;
 * and a study's wide sheet found missing is built again.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/buckets.ts';
import {
  CurrentListing,
  type CurrentOutput,
  CurrentPreparation,
  CurrentStaging,
  type PreparedBucket,
  partitionName,
  wideFolder,
} from '../../src/current/index.ts';
import { studyRow } from '../../src/transform/index.ts';
import { currentOutputIn, publishStudyRun } from '../helpers/current-runs.ts';
import { withTempDir } from '../helpers/environment.ts';
import { study } from '../helpers/fixtures.ts';
import { responseRow } from '../helpers/samples.ts';

const studyId = study.id;
const bucket = bucketOf(studyId);

/** current/ with run 1 committed and run 2 published beside it, not settled. */
async function twoRuns(dir: string): Promise<CurrentOutput> {
  const output = currentOutputIn(dir);
  for (const [runId, settle] of [
    ['20260101T000000Z', true],
    ['20260102T000000Z', false],
  ] as const) {
    const rows = { studies: [studyRow(study)], responses: [responseRow('r-1', { study_id: studyId })] };
    await publishStudyRun(output, { runId, studyId, rows }, settle);
  }
  return output;
}

/** The bucket as a run that found nothing new in the study prepares it, listed or not. */
async function unchanged(output: CurrentOutput, dir: string, listing: boolean): Promise<PreparedBucket> {
  const context = {
    ...output,
    runId: '20260103T000000Z',
    staging: await CurrentStaging.open(join(dir, listing ? 'staging-listed' : 'staging')),
    ...(listing ? { listing: new CurrentListing(output.store) } : {}),
  };
  const preparation = new CurrentPreparation(context, [studyId]);
  await context.staging.forStudy(studyId).close();
  preparation.endsBucket(studyId);
  preparation.add({ study_id: studyId, since: '2026-01-02T00:00:00.000Z', lossless: true, responses: 0 });
  const [prepared] = await preparation.done();
  return prepared!;
}

describe('partitions', () => {
  it('are the same read folder by folder or from one listing, each with its newest part', async () => {
    await withTempDir(async (dir) => {
      const output = await twoRuns(dir);
      const byFolder = (await unchanged(output, dir, false)).partitions;
      const listed = (await unchanged(output, dir, true)).partitions;
      const sorted = (map: typeof byFolder) =>
        [...map].map(([table, p]) => [
          table,
          { ...p, files: [...p.files].sort((a, b) => (a.name < b.name ? -1 : 1)) },
        ]);
      expect(sorted(listed)).toEqual(sorted(byFolder));
      const folder = `current/responses/${partitionName(bucket)}`;
      const responses = byFolder.get('responses')!;
      expect(responses.path).toBe(folder);
      expect(responses.files.map((file) => file.name).sort()).toEqual([
        'part-20260101T000000Z.csv',
        'part-20260101T000000Z.parquet',
        'part-20260102T000000Z.csv',
        'part-20260102T000000Z.parquet',
      ]);
      expect(responses.previous?.path).toBe(`${folder}/part-20260102T000000Z.parquet`);
      expect(responses.previous?.bytes).toBe(
        (await output.store.read(`${folder}/part-20260102T000000Z.parquet`))!.length,
      );
    });
  });

  it("build a study's wide sheet again when it is missing, listed or not", async () => {
    await withTempDir(async (dir) => {
      const output = await twoRuns(dir);
      for (const listing of [false, true])
        expect((await unchanged(output, dir, listing)).wide, `listing: ${listing}`).toEqual([]);
      await rm(join(dir, 'out', ...wideFolder(studyId).split('/')), { recursive: true });
      for (const listing of [false, true]) {
        const wide = (await unchanged(output, dir, listing)).wide.map((sheet) => sheet.studyId);
        expect(wide, `listing: ${listing}`).toEqual([studyId]);
      }
    });
  });
});
