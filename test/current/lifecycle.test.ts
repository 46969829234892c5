/**
 * The current dataset's part in a publication, on a real folder: new parts go in beside the
 * old (publishCurrent), the old go once the run is committed (settleCurrent); a run never
 * committed comes out again (undoCurrent); a partition left with two parts keeps its newest
 * (repairCurrent). Parts are read back with hyparquet.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/buckets.ts';
import {
  type CurrentOutput,
  partitionName,
  publishCurrent,
  repairCurrent,
  settleCurrent,
  undoCurrent,
} from '../../src/current/index.ts';
import { currentOutputIn, prepareStudyRun, publishStudyRun, type StudyRun } from '../helpers/current-runs.ts';
import { withTempDir } from '../helpers/environment.ts';
import { responseRow } from '../helpers/samples.ts';

const studyId = 's-1';
const bucket = bucketOf(studyId);

/** Run `runId`'s export of the study: the responses `ids`, a full export. */
const run = (runId: string, ids: string[]): StudyRun => ({
  runId,
  studyId,
  rows: { responses: ids.map((id) => responseRow(id, { study_id: studyId })) },
});

async function partition(dir: string): Promise<string[]> {
  return (await readdir(join(dir, 'out', 'current', 'responses', partitionName(bucket)))).sort();
}

async function idsIn(dir: string, runId: string): Promise<string[]> {
  const file = join(dir, 'out', 'current', 'responses', partitionName(bucket), `part-${runId}.parquet`);
  const rows = await parquetReadObjects({ file: await asyncBufferFromFile(file) });
  return rows.map((row) => String(row.response_id)).sort();
}

/** current/ with run 1 committed (r-1), and run 2 (r-1, r-2) published beside it, not settled. */
async function twoRuns(dir: string): Promise<CurrentOutput> {
  const output = currentOutputIn(dir);
  await publishStudyRun(output, run('20260101T000000Z', ['r-1']));
  await publishStudyRun(output, run('20260102T000000Z', ['r-1', 'r-2']), false);
  return output;
}

describe('current/ in a publication', () => {
  it('publishes a new part beside the old one, and settles to the new one alone', async () => {
    await withTempDir(async (dir) => {
      const output = currentOutputIn(dir);
      await publishStudyRun(output, run('20260101T000000Z', ['r-1']));
      const { context, prepared } = await prepareStudyRun(output, run('20260102T000000Z', ['r-1', 'r-2']));
      expect(await partition(dir)).toEqual(['part-20260101T000000Z.csv', 'part-20260101T000000Z.parquet']);
      await publishCurrent(context, prepared);
      expect(await partition(dir)).toEqual([
        'part-20260101T000000Z.csv',
        'part-20260101T000000Z.parquet',
        'part-20260102T000000Z.csv',
        'part-20260102T000000Z.parquet',
      ]);
      await settleCurrent(context, prepared);
      expect(await partition(dir)).toEqual(['part-20260102T000000Z.csv', 'part-20260102T000000Z.parquet']);
      expect(await idsIn(dir, '20260102T000000Z')).toEqual(['r-1', 'r-2']);
      // current/datapackage.json names the part that stayed.
      const described = JSON.parse(String(await output.store.read('current/datapackage.json')));
      const paths = described.resources.flatMap((resource: { path: string | string[] }) => resource.path);
      expect(paths).toContain(`responses/${partitionName(bucket)}/part-20260102T000000Z.parquet`);
      // (The studies part stays run 1's: run 2 staged no studies row.)
      const responses = paths.filter((path: string) => path.startsWith('responses/'));
      expect(responses.join()).not.toContain('20260101T000000Z');
    });
  });

  it('undoes the parts of a run never committed, and leaves the others', async () => {
    await withTempDir(async (dir) => {
      const output = await twoRuns(dir);
      expect(await partition(dir)).toHaveLength(4);
      await undoCurrent(output.store, '20260102T000000Z', [studyId]);
      expect(await partition(dir)).toEqual(['part-20260101T000000Z.csv', 'part-20260101T000000Z.parquet']);
      expect(await idsIn(dir, '20260101T000000Z')).toEqual(['r-1']);
    });
  });

  it("completes a committed run's settling: each partition keeps its newest part", async () => {
    await withTempDir(async (dir) => {
      const output = await twoRuns(dir);
      expect(await partition(dir)).toHaveLength(4);
      await repairCurrent(output, '20260102T000000Z', [{ study_id: studyId, wide: false }]);
      expect(await partition(dir)).toEqual(['part-20260102T000000Z.csv', 'part-20260102T000000Z.parquet']);
      expect(await idsIn(dir, '20260102T000000Z')).toEqual(['r-1', 'r-2']);
      expect(await output.store.read('current/datapackage.json')).not.toBeNull();
    });
  });
});
