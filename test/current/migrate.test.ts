/**
 * An output of the earlier layout (a folder per study in each table, study_id=<id %-escaped>,
 * its Parquet parts without study_id) is moved into buckets by the first run that writes, each
 * shard moving its own studies; every response stays, once.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/buckets.ts';
import { partitionName } from '../../src/current/index.ts';
import { verifyRun } from '../../src/load/verify.ts';
import { partitionValueOf } from '../../src/names.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { inShard } from '../../src/shard.ts';
import { tableNames } from '../../src/tables/index.ts';
import { currentTables, freshExport, partitions, toStudyFolders } from '../helpers/current.ts';
import { withTempDir } from '../helpers/environment.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 31, studies: 8, responses: 4 });
});
afterAll(async () => {
  await sandbox.close();
});

const earlierLayout = (current: string) =>
  toStudyFolders(current, { folderOf: partitionValueOf, holdStudyId: false });

/** The folders of current/'s tables, by kind. */
async function folders(current: string): Promise<{ buckets: Set<string>; studies: Set<string> }> {
  const found = { buckets: new Set<string>(), studies: new Set<string>() };
  for (const table of tableNames) {
    for (const name of await readdir(join(current, table))) {
      if (name.startsWith('bucket=')) found.buckets.add(name);
      else if (name.startsWith('study_id=')) found.studies.add(name);
      else throw new Error(`unexpected folder ${table}/${name}`);
    }
  }
  return found;
}

describe('current/ of the earlier layout', () => {
  it('is moved into buckets by the next run that writes, nothing lost, nothing twice', async () => {
    await withTempDir(async (out) => {
      const current = join(out, 'test', 'current');
      const config = sandboxConfig(sandbox, out, { output: { formats: ['csv', 'parquet'] } });
      expect((await runAgainst(sandbox, config)).status).toBe('complete');
      const exported = await currentTables(current);
      await earlierLayout(current);
      // DuckDB reads the earlier layout to the same rows (study_id from the folders).
      expect(await currentTables(current)).toEqual(exported);
      expect((await folders(current)).buckets.size).toBe(0);

      const [study] = sandbox.studies();
      sandbox.addResponse(study!.link_id);
      const next = await runAgainst(sandbox, config);
      expect(next.status).toBe('complete');
      expect((await verifyRun(next.runDir!)).problems).toEqual([]);
      const after = await folders(current);
      expect(after.studies.size).toBe(0);
      expect([...after.buckets].sort()).toEqual(
        [...new Set(sandbox.studies().map((s) => partitionName(bucketOf(s.id))))].sort(),
      );
      expect(await currentTables(current)).toEqual(await freshExport(sandbox));
      for (const table of tableNames) {
        for (const [partition, files] of Object.entries(await partitions(current, table))) {
          expect(
            files.filter((f) => f.endsWith('.parquet')),
            `${table}/${partition}`,
          ).toHaveLength(1);
        }
      }
    });
  });

  it('with shards: each shard moves its own studies; once both ran, one layout, every response once', async () => {
    await withTempDir(async (out) => {
      const current = join(out, 'test', 'current');
      const config = sandboxConfig(sandbox, out, { output: { formats: ['parquet'] } });
      const shard = (index: number) => ({ shard: { index, count: 2 } });
      for (const index of [1, 2])
        expect((await runAgainst(sandbox, config, shard(index))).status).toBe('complete');
      await earlierLayout(current);
      const ofShard = (index: number) => sandbox.studies().filter((s) => inShard(s.id, { index, count: 2 }));
      expect(ofShard(1).length).toBeGreaterThan(0);
      expect(ofShard(2).length).toBeGreaterThan(0);

      // Shard 1 finds something new: it moves its studies alone.
      sandbox.addResponse(ofShard(1)[0]!.link_id);
      expect((await runAgainst(sandbox, config, shard(1))).status).toBe('complete');
      const between = await folders(current);
      expect([...between.studies].sort()).toEqual(
        ofShard(2)
          .map((s) => `study_id=${partitionValueOf(s.id)}`)
          .sort(),
      );
      expect([...between.buckets].sort()).toEqual(
        [...new Set(ofShard(1).map((s) => partitionName(bucketOf(s.id))))].sort(),
      );

      sandbox.addResponse(ofShard(2)[0]!.link_id);
      expect((await runAgainst(sandbox, config, shard(2))).status).toBe('complete');
      expect((await folders(current)).studies.size).toBe(0);
      expect(await currentTables(current)).toEqual(await freshExport(sandbox));
    });
  });
});
