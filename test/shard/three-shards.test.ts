/**
 * N shards on N machines with no coordinator: three `study-export run --shard K/3` processes
 * started at the same time into one output. The union of their current datasets equals, row
 * for row, the current dataset of one unsharded run of the same service (both read with
 * DuckDB over the hive partitions); nothing is missing or duplicated; and each shard's rerun
 * with no changes makes one list call plus one page call per study of its own.
 */

import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/buckets.ts';
import { partitionName } from '../../src/current/index.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { inShard } from '../../src/shard.ts';
import { tableNames } from '../../src/tables/index.ts';
import { runCli } from '../helpers/cli.ts';
import { currentTables } from '../helpers/current.ts';
import { withTempDir } from '../helpers/environment.ts';
import { KEY_ENV } from '../helpers/run.ts';
import { writeShardedPipeline } from '../helpers/shard.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 44, studies: 10, responses: 4 });
});
afterAll(async () => {
  await sandbox.close();
});

function pipelineFile(dir: string, out: string): Promise<string> {
  return writeShardedPipeline(sandbox, dir, { dir: out, formats: ['csv', 'parquet'], media: true });
}

/** `study-export run` with `args`, as a scheduler starts it. */
function runShard(args: string[]) {
  return runCli(['run', ...args], { env: { [KEY_ENV]: sandbox.api_key } });
}

describe('three shards at once into one output', () => {
  it('together hold every row once, exactly as one unsharded run; each rerun makes 1 + its studies requests', async () => {
    expect(sandbox.studies().length).toBeGreaterThanOrEqual(9);
    await withTempDir(async (dir) => {
      const shardedOut = join(dir, 'sharded-out');
      const singleOut = join(dir, 'single-out');
      const shardedConfig = await pipelineFile(dir, shardedOut);
      const starts: number[] = [];
      const runs = [1, 2, 3].map((index) => {
        starts.push(Date.now());
        return runShard(['--config', shardedConfig, '--shard', `${index}/3`]);
      });
      const results = await Promise.all(runs);
      for (const result of results) expect(result, result.stderr).toMatchObject({ code: 0 });
      // They ran side by side: each started before any other finished.
      expect(Math.max(...starts) - Math.min(...starts)).toBeLessThan(1000);

      const single = await withTempDir(async (singleDir) => {
        const config = await pipelineFile(singleDir, singleOut);
        const result = await runShard(['--config', config]);
        expect(result, result.stderr).toMatchObject({ code: 0 });
        return currentTables(join(singleOut, 'sharded', 'current'));
      });
      const union = await currentTables(join(shardedOut, 'sharded', 'current'));
      expect(union).toEqual(single);
      const allResponses = sandbox.studies().flatMap((s) => sandbox.responses(s.link_id).map((r) => r.id));
      expect(union.responses.map((row) => JSON.parse(row).response_id).sort()).toEqual(allResponses.sort());
      for (const table of tableNames) expect(new Set(union[table]).size, table).toBe(union[table].length);
      expect(union.media.length).toBeGreaterThan(0);

      // Three runs, three latest pointers, each partition written by one shard only.
      const root = join(shardedOut, 'sharded');
      const runIds = await readdir(join(root, 'runs'));
      const runOf = (index: number) => runIds.find((id) => id.endsWith(`-shard-${index}-of-3`));
      expect(runIds).toHaveLength(3);
      for (const index of [1, 2, 3]) {
        expect(runOf(index)).toMatch(/^\d{8}T\d{6}Z(-\d+)?-shard-\d-of-3$/);
        expect((await readFile(join(root, `latest-shard-${index}-of-3`), 'utf8')).trim()).toBe(runOf(index));
      }
      for (const study of sandbox.studies()) {
        const index = [1, 2, 3].find((k) => inShard(study.id, { index: k, count: 3 }));
        const parts = await readdir(join(root, 'current', 'answers', partitionName(bucketOf(study.id))));
        expect(parts).toEqual([`part-${runOf(index!)}.csv`, `part-${runOf(index!)}.parquet`]);
      }

      for (const index of [1, 2, 3]) {
        const before = sandbox.requests.length;
        const rerun = await runShard(['--config', shardedConfig, '--shard', `${index}/3`]);
        expect(rerun, rerun.stderr).toMatchObject({ code: 0 });
        const own = sandbox.studies().filter((s) => inShard(s.id, { index, count: 3 })).length;
        expect(own).toBeGreaterThan(0);
        expect(sandbox.requests.length - before).toBe(1 + own);
      }
      expect(await currentTables(join(shardedOut, 'sharded', 'current'))).toEqual(single);
    });
  });
});
