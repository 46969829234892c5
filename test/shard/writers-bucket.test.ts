import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { inShard } from '../../src/shard.ts';
import { runCli } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';
import { validateDataPackage } from '../helpers/frictionless.ts';
import { KEY_ENV } from '../helpers/run.ts';
import { sandboxResponseIds } from '../helpers/run-files.ts';
import { downloadObjects, S3_CREDENTIALS, type S3Server, startS3 } from '../helpers/s3.ts';
import { responsesInShardDescriptors, writeShardedPipeline } from '../helpers/shard.ts';
import { startWriteLog, type WriteLog } from '../helpers/write-log.ts';

let sandbox: Sandbox;
let s3: S3Server;
let proxies: WriteLog[];
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 62, studies: 8, responses: 4 });
  s3 = await startS3(['exports']);
  proxies = await Promise.all([1, 2].map(() => startWriteLog(s3.endpoint)));
});
afterAll(async () => {
  await Promise.all(proxies?.map((proxy) => proxy.close()) ?? []);
  await s3?.close();
  await sandbox?.close();
});

const root = 'team/sharded';

function env(endpoint: string): NodeJS.ProcessEnv {
  return { ...S3_CREDENTIALS, AWS_ENDPOINT_URL: endpoint, [KEY_ENV]: sandbox.api_key, CI: 'true' };
}

/** current/ of the bucket downloaded into `dir`. */
function downloadCurrent(dir: string): Promise<void> {
  return downloadObjects(s3, 'exports', `${root}/current/`, dir);
}

describe('two shards at once into one bucket', () => {
  it('never write the same object, and every descriptor names only objects that are there', async () => {
    await withTempDir(async (dir) => {
      const config = await writeShardedPipeline(sandbox, dir, {
        dir: 's3://exports/team',
        formats: ['csv', 'parquet'],
      });
      for (const index of [1, 2]) {
        expect(sandbox.studies().filter((s) => inShard(s.id, { index, count: 2 })).length).toBeGreaterThan(0);
      }
      const night = async () => {
        const results = await Promise.all(
          [1, 2].map((index) =>
            runCli(['run', '--config', config, '--shard', `${index}/2`], {
              env: env(proxies[index - 1]!.endpoint),
            }),
          ),
        );
        for (const result of results) expect(result, result.stderr).toMatchObject({ code: 0 });
      };
      const describeBucket = async () => {
        const result = await runCli(['describe', `s3://exports/${root}`], { env: env(s3.endpoint) });
        expect(result, result.stderr).toMatchObject({ code: 0 });
        return result.stdout;
      };

      await night();
      await describeBucket();
      const later = new Date(Date.now() + 60_000);
      for (const study of sandbox.studies()) {
        const [response] = sandbox.responses(study.link_id);
        sandbox.touchResponse(study.link_id, response!.id, later);
      }
      await night();

      const [one, two] = proxies.map((proxy) => new Set(proxy.writes));
      expect(one!.size).toBeGreaterThan(10);
      expect(two!.size).toBeGreaterThan(10);
      expect([...one!].filter((key) => two!.has(key))).toEqual([]);
      for (const [index, keys] of [one!, two!].entries()) {
        const label = `shard-${index + 1}-of-2`;
        expect(keys).toContain(`exports/${root}/current/datapackage-${label}.json`);
        expect(keys).toContain(`exports/${root}/latest-${label}`);
        expect(keys).not.toContain(`exports/${root}/current/datapackage.json`);
      }

      await withTempDir(async (current) => {
        await downloadCurrent(current);
        expect(await responsesInShardDescriptors(current, 2)).toBe(sandboxResponseIds(sandbox).length);
      });

      const said = await describeBucket();
      expect(said).toMatch(
        /current\/datapackage\.json: all of current\/, as of latest-shard-1-of-2 \S+, latest-shard-2-of-2/,
      );
      await withTempDir(async (current) => {
        await downloadCurrent(current);
        const report = await validateDataPackage(current);
        expect(report.errors).toEqual([]);
        expect(report.read.responses).toBe(sandboxResponseIds(sandbox).length);
      });
    });
  });
});
