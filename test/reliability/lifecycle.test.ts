/**
 * A pipeline over its life: a study renamed between runs, responses changed while a run
 * pages, and a run killed (SIGKILL) while it downloads media. Across the runs every
 * response is exported, none twice in a run, and state never moves before a commit.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyRun } from '../../src/load/verify.ts';
import type { Manifest } from '../../src/output/manifest.ts';
import { readPipelineState } from '../../src/publish/state.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { expectMediaRequestsKeyless, withTempDir } from '../helpers/environment.ts';
import { readManifest, runAgainst, sandboxConfig, spawnRun, waitFor } from '../helpers/run.ts';
import {
  expectEveryResponseOnce,
  expectNoSecretIn,
  responseIdsOf,
  sandboxResponseIds,
} from '../helpers/run-files.ts';

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 41, studies: 4, responses: 10, latencyMs: 5 });
});
afterAll(async () => {
  await sandbox.close();
});

const warningCodes = (manifest: Manifest) => manifest.warnings.map((w) => w.code);

describe('across runs', () => {
  it('a study renamed between runs is still selected by its old link_id, under its new name, nothing lost', async () => {
    await withTempDir(async (out) => {
      const study = sandbox.studies()[0]!;
      const oldLinkId = study.link_id;
      const config = sandboxConfig(sandbox, out, { studies: { include: [oldLinkId] } });
      const first = await runAgainst(sandbox, config);
      expect(first.status).toBe('complete');
      const before = await responseIdsOf(first.runDir!);

      const newLinkId = `${oldLinkId}-renamed`;
      sandbox.renameStudy(oldLinkId, newLinkId);
      const added = sandbox.addResponse(newLinkId);
      const second = await runAgainst(sandbox, config);
      expect(second.status).toBe('complete');
      const manifest = await readManifest(second.runDir!);
      expect(warningCodes(manifest)).toContain('study_renamed');
      expect(manifest.studies.map((s) => [s.study_id, s.link_id])).toEqual([[study.id, newLinkId]]);
      const after = await responseIdsOf(second.runDir!);
      expect(after).toContain(added);
      expect(new Set(after).size).toBe(after.length);
      // Between the two runs, the study's every response.
      expect([...new Set([...before, ...after])].sort()).toEqual(
        sandboxResponseIds(sandbox, [newLinkId]).sort(),
      );
      expect(await readdir(join(second.runDir!, 'wide'))).toEqual([`${newLinkId}.csv`]);
      const state = await readPipelineState(join(out, 'test'));
      expect(Object.keys(state.studies)).toEqual([study.id]);
      expect(state.studies[study.id]?.link_id).toBe(newLinkId);
      await expectNoSecretIn(out, sandbox.api_key);
    });
  });

  it('responses touched and added while a run pages are in that run or the next incremental one', async () => {
    await withTempDir(async (out) => {
      const study = sandbox.studies()[1]!;
      const config = sandboxConfig(sandbox, out, {
        studies: { include: [study.id] },
        source: { per_page: 2, concurrency: 1 },
      });
      const from = sandbox.requests.length;
      const running = runAgainst(sandbox, config);
      const pages = () =>
        sandbox.requests.slice(from).filter((r) => r.path.includes('?page=') || r.path.includes('&page='))
          .length;
      await waitFor(() => pages() >= 2, 'the run to page');
      // One already listed, one not yet listed, one that did not exist when the run began.
      const listed = sandbox.responses(study.link_id);
      const early = listed[0]!.id;
      const late = listed[listed.length - 1]!.id;
      sandbox.touchResponse(study.link_id, early);
      sandbox.touchResponse(study.link_id, late);
      const added = sandbox.addResponse(study.link_id);
      const first = await running;
      expect(first.status).toBe('complete');
      // Every response that existed is in the first run once; the added one may be too.
      const firstIds = await responseIdsOf(first.runDir!);
      expect(new Set(firstIds).size).toBe(firstIds.length);
      expect(firstIds.filter((id) => id !== added).sort()).toEqual(listed.map((r) => r.id).sort());

      const second = await runAgainst(sandbox, config);
      expect(second.status).toBe('complete');
      const secondIds = await responseIdsOf(second.runDir!);
      expect(new Set(secondIds).size).toBe(secondIds.length);
      // The incremental run asks again for everything updated since the first run began.
      for (const id of [early, late, added]) expect(secondIds, id).toContain(id);
      expect([...new Set([...firstIds, ...secondIds])].sort()).toEqual(
        sandboxResponseIds(sandbox, [study.link_id]).sort(),
      );
    });
  });
});

describe('a run killed during the media downloads', () => {
  it('leaves the previous run, latest and the state untouched; the rerun loses nothing', async () => {
    await withTempDir(async (dir) => {
      const out = join(dir, 'out');
      const settings = { media: { enabled: true, concurrency: 1 }, source: { concurrency: 2 } };
      const first = await runAgainst(sandbox, sandboxConfig(sandbox, out, settings));
      expect(first.status).toBe('complete');
      const root = join(out, 'test');
      const stateBefore = await readPipelineState(root);
      const latestBefore = await readFile(join(root, 'latest'), 'utf8');
      const runsBefore = await readdir(join(root, 'runs'));

      // Changes the killed run would have exported: new responses in every study.
      const added = sandbox.studies().map((s) => sandbox.addResponse(s.link_id));
      const from = sandbox.requests.length;
      sandbox.setFaults('media_latency=100ms');
      try {
        const { child, exited } = await spawnRun(sandbox, dir, out, {
          media: '{ enabled: true, concurrency: 1 }',
          args: ['--full'],
        });
        const downloads = () => sandbox.requests.slice(from).filter((r) => r.listener !== 'api').length;
        await waitFor(() => downloads() >= 3, 'the child to start downloading media');
        child.kill('SIGKILL');
        expect(await exited).toBe('SIGKILL');
      } finally {
        sandbox.setFaults(null);
      }
      expect(await readPipelineState(root)).toEqual(stateBefore);
      expect(await readFile(join(root, 'latest'), 'utf8')).toBe(latestBefore);
      const runsAfterKill = await readdir(join(root, 'runs'));
      expect(runsAfterKill.filter((name) => !name.startsWith('.tmp-'))).toEqual(runsBefore);

      // The rerun (incremental, from the untouched watermark) brings the additions in, once.
      const rerun = await runAgainst(sandbox, sandboxConfig(sandbox, out, settings));
      expect(rerun.status).toBe('complete');
      const ids = await responseIdsOf(rerun.runDir!);
      expect(new Set(ids).size).toBe(ids.length);
      for (const id of added) expect(ids).toContain(id);
      const firstIds = await responseIdsOf(first.runDir!);
      expect([...new Set([...firstIds, ...ids])].sort()).toEqual(sandboxResponseIds(sandbox).sort());
      expect((await readdir(join(root, 'runs'))).filter((name) => name.startsWith('.tmp-'))).toEqual([]);
      expect((await verifyRun(rerun.runDir!)).problems).toEqual([]);
      expect(expectMediaRequestsKeyless(sandbox, from)).toBeGreaterThan(0);
      // And a full rerun has every response exactly once.
      const full = await runAgainst(sandbox, sandboxConfig(sandbox, out), { full: true });
      await expectEveryResponseOnce(full.runDir!, sandboxResponseIds(sandbox));
      await expectNoSecretIn(out, sandbox.api_key);
    });
  });
});
