/**
 * A run stopped anywhere in its publication (killed before or after `latest`, during a --full
 * run that replaces a study's partition): `latest` always names a run whose files are all
 * there, and the next run, finding nothing new on the service, leaves every response exactly
 * once in current/ (DuckDB, hive partitioning on) and the state where the committed run put it.
 */

import { copyFile, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/buckets.ts';
import { partitionName } from '../../src/current/index.ts';
import { verifyRun } from '../../src/load/verify.ts';
import { readPipelineState } from '../../src/publish/state.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { currentKeys } from '../helpers/current.ts';
import { withTempDir } from '../helpers/environment.ts';
import { runAgainst, sandboxConfig, spawnRun } from '../helpers/run.ts';

let sandbox: Sandbox;
beforeEach(async () => {
  sandbox = await startSandbox({ seed: 12, studies: 2, responses: 30 });
});
afterEach(async () => {
  await sandbox.close();
});

const allIds = () => sandbox.studies().flatMap((study) => sandbox.responses(study.link_id).map((r) => r.id));

async function latestOf(pipelineDir: string): Promise<string> {
  return (await readFile(join(pipelineDir, 'latest'), 'utf8')).trim();
}

/** `latest` names a run whose every file is there, as its manifest says. */
async function expectLatestWhole(pipelineDir: string): Promise<string> {
  const runId = await latestOf(pipelineDir);
  expect((await verifyRun(join(pipelineDir, 'runs', runId))).problems).toEqual([]);
  return runId;
}

/** current/ holds every response of the service (and `also`) once, in no partition twice. */
async function expectCurrentHoldsEachOnce(pipelineDir: string, also: string[] = []): Promise<void> {
  const { responseIds, repeated } = await currentKeys(join(pipelineDir, 'current'));
  expect(responseIds).toEqual([...allIds(), ...also].sort());
  expect(
    Object.values(repeated).every((n) => n === 0),
    JSON.stringify(repeated),
  ).toBe(true);
}

/** Every current wide sheet's text, together. */
async function wideSheets(pipelineDir: string): Promise<string> {
  const root = join(pipelineDir, 'current', 'wide');
  let text = '';
  for (const partition of await readdir(root)) {
    for (const sheet of await readdir(join(root, partition)))
      text += await readFile(join(root, partition, sheet), 'utf8');
  }
  return text;
}

describe('a run killed in its publication', () => {
  it.each([
    ['a new part is in current/, before latest', 'current-part-published', false],
    ['latest is written, the parts it replaces are not yet removed', 'run-committed', true],
    ["a study's old parts are removed, its wide sheet not yet in", 'current-replaced-removed', true],
  ])(
    '--full, killed when %s: the next run, with nothing new, makes current/ whole',
    async (_when, point, committed) => {
      await withTempDir(async (out) => {
        const config = sandboxConfig(sandbox, out, { output: { formats: ['parquet', 'csv'] } });
        await runAgainst(sandbox, config);
        const pipelineDir = join(out, 'test');
        const firstRun = await latestOf(pipelineDir);
        // The full run replaces each study's partition: a response deleted on the service goes.
        const [study] = sandbox.studies();
        const gone = sandbox.responses(study!.link_id)[0]!.id;
        sandbox.deleteResponse(study!.link_id, gone);

        // The one study, so that the point is reached in its publication.
        const { exited } = await spawnRun(sandbox, out, out, {
          media: '{ enabled: false }',
          args: ['--full', '--formats', 'parquet,csv', '--study', study!.link_id],
          env: { STUDY_EXPORT_KILL_AT: point },
        });
        expect(await exited).toBe('SIGKILL');
        const killedRun = await latestOf(pipelineDir);
        expect(killedRun === firstRun).toBe(!committed);
        await expectLatestWhole(pipelineDir);
        // The publication was cut short: some response is there twice, or the wide sheet is the old one.
        const left = await currentKeys(join(pipelineDir, 'current'));
        const doubled = left.responseIds.length !== new Set(left.responseIds).size;
        expect(doubled || (await wideSheets(pipelineDir)).includes(gone)).toBe(true);

        const next = await runAgainst(sandbox, config);
        // Nothing changed on the service since the first run's watermark: no run is written, but
        // the killed run is finished (committed) or undone (not committed: its parts go, and the
        // deleted response stays, as after any incremental run).
        expect(next.status).toBe('unchanged');
        await expectCurrentHoldsEachOnce(pipelineDir, committed ? [] : [gone]);
        expect(await readdir(join(pipelineDir, '.pending'))).toEqual([]);
        const latest = await expectLatestWhole(pipelineDir);
        expect(latest).toBe(killedRun);
        // The state is where the killed run put it, when it was committed.
        const state = await readPipelineState(pipelineDir);
        expect(state.studies[study!.id]?.last_run).toBe(committed ? killedRun : firstRun);
        // One part per table and study: each partition holds the newest run's part only.
        for (const table of ['responses', 'answers', 'transcript']) {
          for (const partition of await readdir(join(pipelineDir, 'current', table))) {
            const files = await readdir(join(pipelineDir, 'current', table, partition));
            expect(new Set(files.map((name) => name.replace(/\.(parquet|csv)$/, ''))).size).toBe(1);
          }
        }
        // The wide sheets hold the current responses, the deleted one only while it is current.
        expect((await wideSheets(pipelineDir)).includes(gone)).toBe(!committed);
      });
    },
  );
});

describe('a shard killed in its publication', () => {
  it("is completed by its own next run only: another shard's run leaves its record alone", async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { output: { formats: ['parquet'] } });
      const pipelineDir = join(out, 'test');
      const [one, two] = [1, 2].map((index) => ({ index, count: 2 }));
      await runAgainst(sandbox, config, { shard: one });
      await runAgainst(sandbox, config, { shard: two });
      const { exited } = await spawnRun(sandbox, out, out, {
        media: '{ enabled: false }',
        args: ['--full', '--formats', 'parquet', '--shard', '1/2'],
        env: { STUDY_EXPORT_KILL_AT: 'run-committed' },
      });
      expect(await exited).toBe('SIGKILL');
      const killed = (await readFile(join(pipelineDir, 'latest-shard-1-of-2'), 'utf8')).trim();
      expect(await readdir(join(pipelineDir, '.pending'))).toEqual([`${killed}.json`]);
      // Its studies' old parts are still beside the new ones: their responses are there twice.
      const left = await currentKeys(join(pipelineDir, 'current'));
      expect(left.responseIds.length).toBeGreaterThan(new Set(left.responseIds).size);

      // Shard 2, with nothing new, does not touch shard 1's record or partitions.
      expect((await runAgainst(sandbox, config, { shard: two })).status).toBe('unchanged');
      expect(await readdir(join(pipelineDir, '.pending'))).toEqual([`${killed}.json`]);

      // Shard 1's next run, with nothing new, completes it.
      expect((await runAgainst(sandbox, config, { shard: one })).status).toBe('unchanged');
      expect(await readdir(join(pipelineDir, '.pending'))).toEqual([]);
      await expectCurrentHoldsEachOnce(pipelineDir);
      expect((await verifyRun(join(pipelineDir, 'runs', killed))).problems).toEqual([]);
    });
  });
});

describe('a partition left with two parts by a version that could leave them', () => {
  it('is left alone by a run with nothing new, and made whole by the next run that writes', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { output: { formats: ['parquet'] } });
      const pipelineDir = join(out, 'test');
      await runAgainst(sandbox, config);
      const runId = await latestOf(pipelineDir);
      // An older part beside the newest one, as a run killed half way by such a version left it.
      const responses = join(pipelineDir, 'current', 'responses');
      for (const partition of await readdir(responses)) {
        const newest = join(responses, partition, `part-${runId}.parquet`);
        await copyFile(newest, join(responses, partition, 'part-20000101T000000Z.parquet'));
      }
      const doubled = await currentKeys(join(pipelineDir, 'current'));
      expect(doubled.repeated.responses).toBeGreaterThan(0);

      // A run with nothing new writes nothing, this included.
      expect((await runAgainst(sandbox, config)).status).toBe('unchanged');
      expect((await currentKeys(join(pipelineDir, 'current'))).repeated).toEqual(doubled.repeated);

      // One new response in one study: the run commits, and every study of it is made whole.
      const [study] = sandbox.studies();
      sandbox.addResponse(study!.link_id);
      const next = await runAgainst(sandbox, config);
      expect(next.status).toBe('complete');
      const nextRun = await latestOf(pipelineDir);
      await expectCurrentHoldsEachOnce(pipelineDir);
      for (const partition of await readdir(responses)) {
        const kept = partition === partitionName(bucketOf(study!.id)) ? nextRun : runId;
        expect(await readdir(join(responses, partition))).toEqual([`part-${kept}.parquet`]);
      }
    });
  });
});
