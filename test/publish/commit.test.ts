/**
 * The commit protocol on a real folder, with destinations that note what is asked of them:
 * the record first, each destination published, the run committed (`latest`), then each
 * settled and the record gone; a failure before the commit point undoes everything, one after
 * it leaves the run committed and its record for the next run, which completes it or, for a
 * run `latest` never named, undoes it.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pendingPath } from '../../src/output/layout.ts';
import { commitRun, completePending, settleRun } from '../../src/publish/commit.ts';
import type { Destination } from '../../src/publish/destinations.ts';
import { writePending } from '../../src/publish/record.ts';
import { openPipelineDirectory } from '../../src/publish/run-dir.ts';
import { singleFileStateStore } from '../../src/publish/state.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { withTempDir } from '../helpers/environment.ts';

const entry = {
  link_id: 'coffee',
  watermark: '2026-01-01T00:00:00.000Z',
  last_run: 'r',
  last_run_at: '2026-01-01T00:15:00.000Z',
};

/** A destination that notes each step in `steps`; `fails` names the step that throws. */
function noting(steps: string[], name: string, fails?: 'publish' | 'settle'): Destination {
  const step = (what: string) => async () => {
    steps.push(`${name} ${what}`);
    if (fails === what) throw new Error(`${name} cannot ${what}`);
  };
  return {
    what: `updating ${name}`,
    where: `out/${name}`,
    record(record) {
      record.studies.push({ study_id: name, wide: false });
    },
    publish: step('publish'),
    settle: step('settle'),
    guide: step('guide'),
    undo: step('undo'),
  };
}

async function setUp(dir: string) {
  const storage = new LocalStorage(join(dir, 'out'));
  const pipelineDir = await openPipelineDirectory(storage);
  const run = await pipelineDir.createRun(Date.UTC(2026, 0, 2));
  await run.files.put('manifest.json', '{}\n');
  return { storage, pipelineDir, run };
}

describe('a run published', () => {
  it('writes its record, publishes, commits, settles, and removes the record', async () => {
    await withTempDir(async (dir) => {
      const { storage, pipelineDir, run } = await setUp(dir);
      const steps: string[] = [];
      const publication = {
        storage,
        pipelineDir,
        run,
        destinations: [noting(steps, 'a'), noting(steps, 'b')],
      };
      await commitRun(publication);
      const record = JSON.parse(await readFile(join(dir, 'out', pendingPath(run.id)), 'utf8'));
      expect(record).toEqual({
        version: 1,
        run_id: run.id,
        studies: [
          { study_id: 'a', wide: false },
          { study_id: 'b', wide: false },
        ],
        state: null,
      });
      expect((await readFile(join(dir, 'out', 'latest'), 'utf8')).trim()).toBe(run.id);
      expect(await settleRun(publication)).toEqual([]);
      expect(steps).toEqual(['a publish', 'b publish', 'a settle', 'a guide', 'b settle', 'b guide']);
      expect(await readdir(join(dir, 'out', '.pending'))).toEqual([]);
      await pipelineDir.release();
    });
  });

  it('undoes what it published when a destination fails before the commit point', async () => {
    await withTempDir(async (dir) => {
      const { storage, pipelineDir, run } = await setUp(dir);
      const steps: string[] = [];
      const publication = {
        storage,
        pipelineDir,
        run,
        destinations: [noting(steps, 'a'), noting(steps, 'b', 'publish')],
      };
      await expect(commitRun(publication)).rejects.toThrow('b cannot publish');
      expect(steps).toEqual(['a publish', 'b publish', 'a undo', 'b undo']);
      expect(await storage.read('latest')).toBeNull();
      expect(await readdir(join(dir, 'out', '.pending'))).toEqual([]);
      await run.discard();
      expect(await readdir(join(dir, 'out', 'runs'))).toEqual([]);
      await pipelineDir.release();
    });
  });

  it('stays committed when settling fails, saying so, with its record kept for the next run', async () => {
    await withTempDir(async (dir) => {
      const { storage, pipelineDir, run } = await setUp(dir);
      const steps: string[] = [];
      const publication = { storage, pipelineDir, run, destinations: [noting(steps, 'a', 'settle')] };
      await commitRun(publication);
      const unfinished = await settleRun(publication);
      expect(unfinished).toEqual([
        `run ${run.id} committed, but updating a failed on out/a: a cannot settle; the next run completes it`,
      ]);
      // Its guide is written all the same: it is no part of the data.
      expect(steps).toEqual(['a publish', 'a settle', 'a guide']);
      expect(await storage.read(pendingPath(run.id))).not.toBeNull();
      expect((await readFile(join(dir, 'out', 'latest'), 'utf8')).trim()).toBe(run.id);
      await pipelineDir.release();
    });
  });
});

describe('what the next run finishes', () => {
  it("completes a committed run's record (its state entries written) and undoes one never committed", async () => {
    await withTempDir(async (dir) => {
      const storage = new LocalStorage(join(dir, 'out'));
      const stateStore = singleFileStateStore(storage, 'state.json');
      const current = {
        store: storage,
        name: 'test',
        formats: ['csv'] as const,
        csv: { bom: false, escape_formulae: true },
        scratchDir: dir,
      };
      // Committed: latest names it. Never committed: a later run id, its folder left behind.
      await storage.put('latest', '20260102T000000Z\n');
      await writePending(storage, {
        version: 1,
        run_id: '20260102T000000Z',
        studies: [],
        state: { 'study-1': entry },
      });
      await writePending(storage, {
        version: 1,
        run_id: '20260103T000000Z',
        studies: [],
        state: { 'study-2': entry },
      });
      await storage.put('runs/20260103T000000Z/manifest.json', '{}\n');
      const done = await completePending({
        storage,
        shard: undefined,
        stateStore,
        current: { ...current, formats: ['csv'] },
      });
      expect(done).toEqual({ completed: ['20260102T000000Z'], undone: ['20260103T000000Z'] });
      expect(Object.keys((await stateStore.read()).studies)).toEqual(['study-1']);
      expect(await readdir(join(dir, 'out', '.pending'))).toEqual([]);
      expect(await storage.listFolders('runs')).toEqual([]);
    });
  });
});
