/** Sharded runs in one output: each shard's own run ids, latest pointer, lock and leftovers. */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { inShard } from '../../src/shard.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readHyparquet } from '../helpers/readers.ts';
import { apiRequestsSince, readManifest, runAgainst, sandboxConfig } from '../helpers/run.ts';

let sandbox: Sandbox;
beforeEach(async () => {
  sandbox = await startSandbox({ seed: 12, studies: 9, responses: 3 });
});
afterEach(async () => {
  await sandbox.close();
});

const count = 3;
const shards = [1, 2, 3].map((index) => ({ index, count }));

describe('sharded runs', () => {
  it('each shard exports its own studies into its own run; together every response once', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { output: { formats: ['parquet'] } });
      const root = join(out, 'test');
      const responseIds: string[] = [];
      for (const shard of shards) {
        const result = await runAgainst(sandbox, config, { shard });
        expect(result.status).toBe('complete');
        expect(result.runDir).toMatch(new RegExp(`runs[/\\\\]\\d{8}T\\d{6}Z-shard-${shard.index}-of-3$`));
        const manifest = await readManifest(result.runDir!);
        const own = sandbox.studies().filter((study) => inShard(study.id, shard));
        expect(manifest.studies.map((s) => s.study_id).sort()).toEqual(own.map((s) => s.id).sort());
        const studies = await readHyparquet(join(result.runDir!, 'studies.parquet'));
        expect(studies.map((row) => row.study_id).sort()).toEqual(own.map((s) => s.id).sort());
        const latest = (await readFile(join(root, `latest-shard-${shard.index}-of-3`), 'utf8')).trim();
        expect(join(root, 'runs', latest)).toBe(result.runDir);
        for (const row of await readHyparquet(join(result.runDir!, 'responses.parquet'))) {
          responseIds.push(row.response_id as string);
        }
      }
      const all = sandbox.studies().flatMap((study) => sandbox.responses(study.link_id).map((r) => r.id));
      expect(responseIds.sort()).toEqual(all.sort());
      // `latest` belongs to unsharded runs: no shard wrote it.
      expect((await readdir(root)).filter((name) => name.startsWith('latest')).sort()).toEqual([
        'latest-shard-1-of-3',
        'latest-shard-2-of-3',
        'latest-shard-3-of-3',
      ]);

      for (const shard of shards) {
        const before = sandbox.requests.length;
        const rerun = await runAgainst(sandbox, config, { shard });
        // Nothing new: no run written, latest-shard-K-of-N untouched (test/pipeline/nothing-new.test.ts).
        expect(rerun.status).toBe('unchanged');
        const own = sandbox.studies().filter((study) => inShard(study.id, shard)).length;
        expect(rerun.unchanged?.requests).toBe(1 + own);
        expect(apiRequestsSince(sandbox, before)).toHaveLength(1 + own);
        expect(sandbox.requests.length - before).toBe(1 + own);
      }
    });
  });

  it("a shard clears its own killed runs and lock, never another shard's", async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out);
      const root = join(out, 'test');
      await mkdir(join(root, 'runs', '.tmp-20300101T000000Z-shard-2-of-3'), { recursive: true });
      await mkdir(join(root, 'runs', '.tmp-20300101T000000Z-shard-1-of-3'), { recursive: true });
      await mkdir(join(root, 'runs', '.tmp-20300101T000000Z'), { recursive: true });
      // Another shard's live lock (this process holds it: it is alive) does not stop shard 1.
      await writeFile(join(root, '.lock-shard-2-of-3'), String(process.pid));
      const result = await runAgainst(sandbox, config, { shard: shards[0] });
      expect(result.status).toBe('complete');
      const left = (await readdir(join(root, 'runs'))).filter((name) => name.startsWith('.tmp-')).sort();
      expect(left).toEqual(['.tmp-20300101T000000Z', '.tmp-20300101T000000Z-shard-2-of-3']);
      expect((await readdir(root)).filter((name) => name.startsWith('.lock'))).toEqual([
        '.lock-shard-2-of-3',
      ]);
    });
  });
});
