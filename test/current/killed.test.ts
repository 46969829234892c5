/**
 * A run killed (SIGKILL) while it rewrites a study's bucket: the previous part is still
 * there and readable, and the rerun (state did not move, so it exports the same responses
 * again) completes the partition: one part per table, every response once, newest copy.
 */

import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/buckets.ts';
import { partitionName } from '../../src/current/index.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { tableNames } from '../../src/tables/index.ts';
import { currentTables, partitions } from '../helpers/current.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readHyparquet } from '../helpers/readers.ts';
import { runAgainst, sandboxConfig, spawnRun } from '../helpers/run.ts';

let sandbox: Sandbox;
beforeEach(async () => {
  sandbox = await startSandbox({ seed: 8, studies: 2, responses: 400 });
});
afterEach(async () => {
  await sandbox.close();
});

describe('a run killed while rewriting a partition', () => {
  it('leaves the previous part readable, and the rerun completes the partition', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { output: { formats: ['parquet'] } });
      await runAgainst(sandbox, config);
      const current = join(out, 'test', 'current');
      const [study] = sandbox.studies();
      const partition = join(current, 'responses', partitionName(bucketOf(study!.id)));
      const [previous] = await readdir(partition);
      expect(previous).toMatch(/^part-.*\.parquet$/);
      const later = new Date(Date.now() + 60_000);
      for (const response of sandbox.responses(study!.link_id)) {
        sandbox.touchResponse(study!.link_id, response.id, later);
      }

      // Killed right after the study's first new part (responses) is in place: moving a part
      // in is one rename, far too quick to hit with a kill from outside. The one study only,
      // so that the first part published is its own.
      const { exited } = await spawnRun(sandbox, out, out, {
        media: '{ enabled: false }',
        args: ['--formats', 'parquet', '--study', study!.link_id],
        env: { STUDY_EXPORT_KILL_AT: 'current-part-published' },
      });
      expect(await exited).toBe('SIGKILL');

      // Killed after its new part appeared and before the previous one was removed.
      const left = await readdir(partition);
      expect(left).toContain(previous);
      expect(left.filter((name) => name.endsWith('.parquet'))).toHaveLength(2);
      const rows = (await readHyparquet(join(partition, previous!))).filter(
        (row) => row.study_id === study!.id,
      );
      expect(rows).toHaveLength(400);
      expect(new Set(rows.map((row) => row.response_id)).size).toBe(400);

      const rerun = await runAgainst(sandbox, config);
      expect(rerun.status).toBe('complete');
      for (const table of tableNames) {
        for (const [name, files] of Object.entries(await partitions(current, table))) {
          expect(files, `${table}/${name}`).toHaveLength(1);
        }
      }
      const tables = await currentTables(current);
      const fresh = await withTempDir(async (dir) => {
        const result = await runAgainst(
          sandbox,
          sandboxConfig(sandbox, dir, { output: { formats: ['parquet'] } }),
        );
        return currentTables(result.runDir!, 'run');
      });
      expect(tables).toEqual(fresh);
    });
  });
});
