/**
 * A run that finds nothing new writes nothing: no run folder, no lock, no file created,
 * rewritten or removed (latest, current/ and every state object stay exactly as they were),
 * it says which run latest still names and what the check cost, and the owed recordings of a
 * run without media stay owed.
 */

import { writeFileSync } from 'node:fs';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/buckets.ts';
import { partitionName } from '../../src/current/index.ts';
import { readPipelineState } from '../../src/publish/state.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readHyparquet } from '../helpers/readers.ts';
import { apiRequestsSince, readManifest, runAgainst, sandboxConfig, snapshot } from '../helpers/run.ts';
import { sandboxResponseIds } from '../helpers/run-files.ts';

let sandbox: Sandbox;
beforeEach(async () => {
  sandbox = await startSandbox({ seed: 33, studies: 4, responses: 5 });
});
afterEach(async () => {
  await sandbox.close();
});

const runIdOf = (runDir: string | null) => runDir!.split(/[/\\]/).pop()!;
const totalResponses = () => sandboxResponseIds(sandbox).length;

describe('a run with nothing new', () => {
  it('writes nothing, moves nothing, reports 1 + S requests; the next change is exported in full', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { media: { enabled: true } });
      const root = join(out, 'test');
      const first = await runAgainst(sandbox, config);
      expect(first.status).toBe('complete');
      const before = await snapshot(root);
      expect(Object.keys(before).filter((path) => path.startsWith('current'))).not.toEqual([]);

      const from = sandbox.requests.length;
      const second = await runAgainst(sandbox, config);
      expect(second).toMatchObject({
        status: 'unchanged',
        runDir: null,
        unchanged: {
          sinceRun: runIdOf(first.runDir),
          pointer: 'latest',
          latest: runIdOf(first.runDir),
          studies: sandbox.studies().length,
          requests: 1 + sandbox.studies().length,
        },
      });
      // The sandbox's own log agrees: the study list and one page per study, no media.
      expect(sandbox.requests.slice(from)).toHaveLength(1 + sandbox.studies().length);
      expect(apiRequestsSince(sandbox, from)).toHaveLength(1 + sandbox.studies().length);
      expect(await snapshot(root)).toEqual(before);
      expect(await readdir(join(root, 'runs'))).toEqual([runIdOf(first.runDir)]);

      // The watermarks did not move, so a change after it is found, and only that change.
      const [study] = sandbox.studies();
      const touched = sandbox.responses(study!.link_id)[1]!.id;
      sandbox.touchResponse(study!.link_id, touched, new Date(Date.now() + 1000));
      const added = sandbox.addResponse(study!.link_id);
      const beforeThird = sandbox.requests.length;
      const third = await runAgainst(sandbox, config);
      expect(third.status).toBe('complete');
      // Each other study is listed once: the empty first page asked for before the run took its
      // lock is its listing.
      for (const other of sandbox.studies().slice(1)) {
        const listed = apiRequestsSince(sandbox, beforeThird).filter((r) =>
          r.path.startsWith(`/api/public/responses/${other.link_id}?`),
        );
        expect(listed, other.link_id).toHaveLength(1);
      }
      const ids = (await readHyparquet(join(third.runDir!, 'responses.parquet'))).map((r) => r.response_id);
      expect(ids.sort()).toEqual([touched, added].sort());
      expect((await readFile(join(root, 'latest'), 'utf8')).trim()).toBe(runIdOf(third.runDir));
      const current = await readHyparquet(
        join(
          root,
          'current',
          'responses',
          partitionName(bucketOf(study!.id)),
          `part-${runIdOf(third.runDir)}.parquet`,
        ),
      );
      expect(
        current
          .filter((r) => r.study_id === study!.id)
          .map((r) => r.response_id)
          .sort(),
      ).toEqual(
        sandbox
          .responses(study!.link_id)
          .map((r) => r.id)
          .sort(),
      );
    });
  });

  it('leaves recordings owed by a run without media owed, and the run with media archives them', async () => {
    await withTempDir(async (out) => {
      const root = join(out, 'test');
      const withoutMedia = sandboxConfig(sandbox, out, { media: { enabled: false } });
      const first = await runAgainst(sandbox, withoutMedia);
      expect(first.status).toBe('complete');
      const owed = await readPipelineState(root);
      for (const entry of Object.values(owed.studies)) expect(entry.media_watermark).toBeNull();
      const before = await snapshot(root);

      const second = await runAgainst(sandbox, withoutMedia);
      expect(second.status).toBe('unchanged');
      expect(await snapshot(root)).toEqual(before);
      expect(await readPipelineState(root)).toEqual(owed);

      // With media, every response is listed again (from the media watermark) and archived.
      const third = await runAgainst(sandbox, sandboxConfig(sandbox, out, { media: { enabled: true } }));
      expect(third.status).toBe('complete');
      expect(third.tables.find((t) => t.table === 'responses')?.rows).toBe(totalResponses());
      const media = await readHyparquet(join(third.runDir!, 'media.parquet'));
      expect(media.length).toBeGreaterThan(0);
      expect(media.filter((m) => m.status !== 'archived')).toEqual([]);
      const archived = await readPipelineState(root);
      for (const entry of Object.values(archived.studies))
        expect(entry.media_watermark).toBe(entry.watermark);

      // And now, with media, nothing is owed or new.
      const fourth = await runAgainst(sandbox, sandboxConfig(sandbox, out, { media: { enabled: true } }));
      expect(fourth.status).toBe('unchanged');
      expect(fourth.unchanged?.latest).toBe(runIdOf(third.runDir));
    });
  });

  it('a CI runner that restored only state/ (no runs, no latest) writes nothing on an empty night', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out);
      const root = join(out, 'test');
      const first = await runAgainst(sandbox, config);
      expect(first.status).toBe('complete');
      // What actions/cache restores on a fresh runner: state/ and nothing else.
      await rm(join(root, 'runs'), { recursive: true });
      await rm(join(root, 'current'), { recursive: true });
      await rm(join(root, 'latest'));
      const before = await snapshot(root);
      const second = await runAgainst(sandbox, config);
      expect(second).toMatchObject({
        status: 'unchanged',
        unchanged: { sinceRun: runIdOf(first.runDir), pointer: 'latest', latest: null },
      });
      expect(await snapshot(root)).toEqual(before);
      expect(await readdir(root)).not.toContain('latest');
    });
  });

  it('a --full run, a first run and a renamed study always write a run', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out);
      const root = join(out, 'test');
      const first = await runAgainst(sandbox, config);
      expect(first.status).toBe('complete');
      const full = await runAgainst(sandbox, config, { full: true });
      expect(full.status).toBe('complete');
      expect(full.tables.find((t) => t.table === 'responses')?.rows).toBe(totalResponses());
      expect((await readFile(join(root, 'latest'), 'utf8')).trim()).toBe(runIdOf(full.runDir));

      const [study] = sandbox.studies();
      sandbox.renameStudy(study!.link_id, 'renamed-study');
      const renamed = await runAgainst(sandbox, config);
      expect(renamed.status).toBe('complete');
      const manifest = await readManifest(renamed.runDir!);
      expect(manifest.warnings.map((w) => w.code)).toContain('study_renamed');
      expect((await readPipelineState(root)).studies[study!.id]?.link_id).toBe('renamed-study');
      expect((await readFile(join(root, 'latest'), 'utf8')).trim()).toBe(runIdOf(renamed.runDir));
    });
  });

  it('a study seen for the first time is a reason to write a run, even with no responses', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out);
      expect((await runAgainst(sandbox, config)).status).toBe('complete');
      expect((await runAgainst(sandbox, config)).status).toBe('unchanged');
      const added = sandbox.addStudy({ link_id: 'new-and-empty', responses: 0 });
      const second = await runAgainst(sandbox, config);
      expect(second.status).toBe('complete');
      expect(second.tables.find((t) => t.table === 'responses')?.rows).toBe(0);
      expect(second.tables.find((t) => t.table === 'studies')?.rows).toBe(sandbox.studies().length);
      expect((await readPipelineState(join(out, 'test'))).studies[added.id]?.link_id).toBe('new-and-empty');
      expect((await runAgainst(sandbox, config)).status).toBe('unchanged');
    });
  });

  it("takes no lock: another run's live lock neither stops it nor is touched", async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out);
      const root = join(out, 'test');
      expect((await runAgainst(sandbox, config)).status).toBe('complete');
      // A lock held by a live process (this test's parent) that is not this one.
      await writeFile(join(root, '.lock'), String(process.ppid));
      const before = await snapshot(root);
      expect((await runAgainst(sandbox, config)).status).toBe('unchanged');
      expect(await snapshot(root)).toEqual(before);
      // A run with something to write waits for the lock's holder.
      sandbox.addResponse(sandbox.studies()[0]!.link_id);
      await expect(runAgainst(sandbox, config)).rejects.toThrow(
        /another run of this pipeline is in progress/,
      );
      expect(await snapshot(root)).toEqual(before);
    });
  });

  it('a run that finds latest moved when it takes its lock asks the service again', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out);
      const root = join(out, 'test');
      expect((await runAgainst(sandbox, config)).status).toBe('complete');
      const [study, ...others] = sandbox.studies();
      const added = sandbox.addResponse(study!.link_id);
      const from = sandbox.requests.length;
      // Another run's commit, after this one read latest and before it takes the lock.
      const run = await runAgainst(sandbox, config, {
        onPreviousRun: (previous) => {
          if (!previous.committedNow) writeFileSync(join(root, 'latest'), '29991231T000000Z\n');
        },
      });
      expect(run.status).toBe('complete');
      expect(run.tables.find((t) => t.table === 'responses')?.rows).toBe(1);
      expect((await readHyparquet(join(run.runDir!, 'responses.parquet')))[0]?.response_id).toBe(added);
      // The first pages it got before are not used: each study's is asked for again.
      for (const other of others) {
        const listed = apiRequestsSince(sandbox, from).filter((r) =>
          r.path.startsWith(`/api/public/responses/${other.link_id}?`),
        );
        expect(listed, other.link_id).toHaveLength(2);
      }
    });
  });

  it('a shard with nothing new leaves its own pointer, runs and state alone', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out);
      const root = join(out, 'test');
      const shard = { index: 1, count: 2 };
      const first = await runAgainst(sandbox, config, { shard });
      expect(first.status).toBe('complete');
      const before = await snapshot(root);
      const own = (await readManifest(first.runDir!)).studies.length;
      expect(own).toBeGreaterThan(0);
      const from = sandbox.requests.length;
      const second = await runAgainst(sandbox, config, { shard });
      expect(second).toMatchObject({
        status: 'unchanged',
        unchanged: { pointer: 'latest-shard-1-of-2', latest: runIdOf(first.runDir), studies: own },
      });
      expect(apiRequestsSince(sandbox, from)).toHaveLength(1 + own);
      expect(second.unchanged?.requests).toBe(1 + own);
      expect(await snapshot(root)).toEqual(before);
    });
  });
});
