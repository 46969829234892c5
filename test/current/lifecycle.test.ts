/**
 * The current dataset's part in a publication, on a real folder: new parts go in beside the
 * old (publishCurrent), the old go once the run is committed (settleCurrent); a run never
 * committed comes out again (undoCurrent); a partition left with two parts keeps its newest
 * (repairCurrent). Parts are read back with hyparquet.
 */
import { mkdtemp, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/buckets.ts';
import type { CurrentContext, CurrentOutput, PreparedBucket } from '../../src/current/context.ts';
import { publishCurrent, repairCurrent, settleCurrent, undoCurrent } from '../../src/current/lifecycle.ts';
import { partitionsOf } from '../../src/current/partitions.ts';
import { createPartWriter, partitionName, publishPart } from '../../src/current/parts.ts';
import { CurrentStaging } from '../../src/current/staging.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { withTempDir } from '../helpers/environment.ts';
import { responseRow } from '../helpers/samples.ts';

const studyId = 's-1';
const bucket = bucketOf(studyId);
const csv = { bom: false, escape_formulae: true };

function outputIn(dir: string): CurrentOutput {
  return {
    store: new LocalStorage(join(dir, 'out')),
    name: 'test',
    formats: ['parquet', 'csv'],
    csv,
    scratchDir: dir,
  };
}

/** A responses part of run `runId` holding `ids`, prepared in scratch. */
async function responsesPart(output: CurrentOutput, runId: string, ids: string[]) {
  const writer = await createPartWriter('responses', bucket, runId, {
    formats: ['parquet', 'csv'],
    csv,
    dir: await mkdtemp(join(output.scratchDir, 'part-')),
  });
  await writer.write(ids.map((id) => responseRow(id)));
  return writer.finish();
}

async function partition(dir: string): Promise<string[]> {
  return (await readdir(join(dir, 'out', 'current', 'responses', partitionName(bucket)))).sort();
}

async function idsIn(dir: string, runId: string): Promise<string[]> {
  const file = join(dir, 'out', 'current', 'responses', partitionName(bucket), `part-${runId}.parquet`);
  const rows = await parquetReadObjects({ file: await asyncBufferFromFile(file) });
  return rows.map((row) => String(row.response_id)).sort();
}

describe('current/ in a publication', () => {
  it('publishes a new part beside the old one, and settles to the new one alone', async () => {
    await withTempDir(async (dir) => {
      const output = outputIn(dir);
      await publishPart(output.store, await responsesPart(output, '20260101T000000Z', ['r-1']));
      const prepared: PreparedBucket = {
        bucket,
        studyIds: [studyId],
        parts: [await responsesPart(output, '20260102T000000Z', ['r-1', 'r-2'])],
        rewrite: new Set(['responses']),
        partitions: await partitionsOf(output.store, bucket),
        wide: [],
      };
      const context: CurrentContext = {
        ...output,
        runId: '20260102T000000Z',
        staging: await CurrentStaging.open(join(dir, 'staging')),
      };
      await publishCurrent(context, [prepared]);
      expect(await partition(dir)).toEqual([
        'part-20260101T000000Z.csv',
        'part-20260101T000000Z.parquet',
        'part-20260102T000000Z.csv',
        'part-20260102T000000Z.parquet',
      ]);
      await settleCurrent(context, [prepared]);
      expect(await partition(dir)).toEqual(['part-20260102T000000Z.csv', 'part-20260102T000000Z.parquet']);
      expect(await idsIn(dir, '20260102T000000Z')).toEqual(['r-1', 'r-2']);
      // current/datapackage.json names the part that stayed.
      const described = JSON.parse(String(await output.store.read('current/datapackage.json')));
      const paths = described.resources.flatMap((resource: { path: string | string[] }) => resource.path);
      expect(paths).toContain(`responses/${partitionName(bucket)}/part-20260102T000000Z.parquet`);
      expect(paths.join()).not.toContain('20260101T000000Z');
    });
  });

  it('undoes the parts of a run never committed, and leaves the others', async () => {
    await withTempDir(async (dir) => {
      const output = outputIn(dir);
      await publishPart(output.store, await responsesPart(output, '20260101T000000Z', ['r-1']));
      await publishPart(output.store, await responsesPart(output, '20260102T000000Z', ['r-1', 'r-2']));
      await undoCurrent(output.store, '20260102T000000Z', [studyId]);
      expect(await partition(dir)).toEqual(['part-20260101T000000Z.csv', 'part-20260101T000000Z.parquet']);
      expect(await idsIn(dir, '20260101T000000Z')).toEqual(['r-1']);
    });
  });

  it("completes a committed run's settling: each partition keeps its newest part", async () => {
    await withTempDir(async (dir) => {
      const output = outputIn(dir);
      await publishPart(output.store, await responsesPart(output, '20260101T000000Z', ['r-1']));
      await publishPart(output.store, await responsesPart(output, '20260102T000000Z', ['r-1', 'r-2']));
      await repairCurrent(output, '20260102T000000Z', [{ study_id: studyId, wide: false }]);
      expect(await partition(dir)).toEqual(['part-20260102T000000Z.csv', 'part-20260102T000000Z.parquet']);
      expect(await idsIn(dir, '20260102T000000Z')).toEqual(['r-1', 'r-2']);
      expect(await output.store.read('current/datapackage.json')).not.toBeNull();
    });
  });
});
