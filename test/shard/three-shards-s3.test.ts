/**
 * Three shards at once into one bucket (s3rver on loopback): the union of the current dataset
 * they leave in the bucket, downloaded with the plain SDK and read with DuckDB over its hive
 * partitions, equals one unsharded local run's, row for row; each rerun with no changes makes
 * 1 + its studies requests.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { inShard } from '../../src/shard.ts';
import { tableNames } from '../../src/tables/index.ts';
import { runCli } from '../helpers/cli.ts';
import { currentTables } from '../helpers/current.ts';
import { withTempDir } from '../helpers/environment.ts';
import { KEY_ENV, runAgainst, sandboxConfig } from '../helpers/run.ts';
import { sandboxResponseIds } from '../helpers/run-files.ts';
import { downloadObjects, S3_CREDENTIALS, type S3Server, startS3 } from '../helpers/s3.ts';
import { writeShardedPipeline } from '../helpers/shard.ts';

let sandbox: Sandbox;
let s3: S3Server;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 45, studies: 10, responses: 3 });
  s3 = await startS3(['exports']);
});
afterAll(async () => {
  await s3?.close();
  await sandbox?.close();
});

/** `study-export run --shard`, as a scheduler starts it. */
function runShard(config: string, shard: string) {
  return runCli(['run', '--config', config, '--shard', shard], {
    env: { ...S3_CREDENTIALS, [KEY_ENV]: sandbox.api_key },
  });
}

describe('three shards at once into one bucket', () => {
  it('together hold every row once, exactly as one unsharded run; each rerun makes 1 + its studies requests', async () => {
    expect(sandbox.studies().length).toBeGreaterThanOrEqual(9);
    await withTempDir(async (dir) => {
      const config = await writeShardedPipeline(sandbox, dir, {
        dir: 's3://exports/team',
        formats: ['parquet'],
        endpoint: s3.endpoint,
      });
      const results = await Promise.all(['1/3', '2/3', '3/3'].map((shard) => runShard(config, shard)));
      for (const result of results) expect(result, result.stderr).toMatchObject({ code: 0 });

      const local = join(dir, 'single');
      await runAgainst(
        sandbox,
        sandboxConfig(sandbox, local, { name: 'sharded', output: { formats: ['parquet'] } }),
      );
      const single = await currentTables(join(local, 'sharded', 'current'));
      const downloaded = join(dir, 'downloaded');
      await downloadObjects(s3, 'exports', 'team/sharded/current/', downloaded);
      const union = await currentTables(downloaded);
      expect(union).toEqual(single);
      for (const table of tableNames) expect(new Set(union[table]).size, table).toBe(union[table].length);
      expect(union.responses.length).toBe(sandboxResponseIds(sandbox).length);

      for (const index of [1, 2, 3]) {
        const before = sandbox.requests.length;
        const rerun = await runShard(config, `${index}/3`);
        expect(rerun, rerun.stderr).toMatchObject({ code: 0 });
        const own = sandbox.studies().filter((s) => inShard(s.id, { index, count: 3 })).length;
        expect(sandbox.requests.length - before).toBe(1 + own);
      }
    });
  });
});
