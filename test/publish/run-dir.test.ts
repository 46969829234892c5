/**
 * A run's folder in the pipeline's output: the lease released, a staged run with an id of its own
 * (two in one second differ; a shard's end in its label), `latest` written only by the commit,
 * what a shard owns.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ownRun, shardNames } from '../../src/output/layout.ts';
import { openPipelineDirectory, readLatest } from '../../src/publish/run-dir.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { withTempDir } from '../helpers/environment.ts';

describe('the run directory', () => {
  it('stages runs with distinct ids, and names one in latest only once it is committed', async () => {
    await withTempDir(async (dir) => {
      const storage = new LocalStorage(join(dir, 'out'));
      const pipelineDir = await openPipelineDirectory(storage);
      const at = Date.UTC(2026, 0, 2, 3, 4, 5);
      const first = await pipelineDir.createRun(at);
      await first.files.put('manifest.json', '{}\n');
      await first.commit();
      const second = await pipelineDir.createRun(at);
      expect([first.id, second.id]).toEqual(['20260102T030405Z', '20260102T030405Z-2']);
      expect(await readLatest(storage, undefined)).toEqual({ pointer: 'latest', runId: first.id });
      await second.discard();
      expect(await readdir(join(dir, 'out', 'runs'))).toEqual([first.id]);
      expect((await pipelineDir.latest()).runId).toBe(first.id);
      await pipelineDir.release();
      expect(await readdir(join(dir, 'out'))).not.toContain('.lock');
    });
  });

  it("gives a shard its own lock, pointer and run ids, and leaves other shards' runs alone", async () => {
    await withTempDir(async (dir) => {
      const shard = { index: 2, count: 3 };
      expect(shardNames(shard)).toEqual({
        lock: '.lock-shard-2-of-3',
        latest: 'latest-shard-2-of-3',
        runSuffix: '-shard-2-of-3',
      });
      expect(ownRun('20260102T030405Z-shard-2-of-3', '-shard-2-of-3')).toBe(true);
      expect(ownRun('20260102T030405Z-shard-1-of-3', '-shard-2-of-3')).toBe(false);
      expect(ownRun('20260102T030405Z', '')).toBe(true);
      expect(ownRun('20260102T030405Z-shard-1-of-3', '')).toBe(false);
      const storage = new LocalStorage(join(dir, 'out'));
      const pipelineDir = await openPipelineDirectory(storage, { shard });
      const run = await pipelineDir.createRun(Date.UTC(2026, 0, 2, 3, 4, 5));
      await run.files.put('manifest.json', '{}\n');
      await run.commit();
      expect(run.id).toBe('20260102T030405Z-shard-2-of-3');
      expect(await readLatest(storage, shard)).toEqual({ pointer: 'latest-shard-2-of-3', runId: run.id });
      expect(await readLatest(storage, undefined)).toEqual({ pointer: 'latest', runId: null });
      await pipelineDir.release();
    });
  });
});
