/**
 * A run's plan against the sandbox: the studies it covers (its shard's only), a dry run's plan
 * as its result, and an incremental run that can only find nothing new found out before it
 * writes anything, by each study's first page.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planRun } from '../../src/pipeline/plan.ts';
import { silentReporter } from '../../src/pipeline/progress.ts';
import type { RunOptions } from '../../src/pipeline/types.ts';
import { emptyState, type State, studyStateStore } from '../../src/publish/state.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { inShard } from '../../src/shard.ts';
import { LocalStorage } from '../../src/storage/local.ts';
import { withTempDir } from '../helpers/environment.ts';
import { sandboxClient } from '../helpers/extract.ts';
import { sandboxConfig } from '../helpers/run.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 23, studies: 4, responses: 3 });
});
afterAll(async () => {
  await sandbox.close();
});

async function plan(
  dir: string,
  options: Partial<RunOptions>,
  state: State = emptyState(),
  latest: string | null = null,
) {
  const config = sandboxConfig(sandbox, dir);
  const client = sandboxClient(sandbox);
  const log = { warnings: [], warn() {} };
  try {
    return await planRun({
      client,
      config,
      options: { config, configFile: 'test', reporter: silentReporter, env: {}, ...options },
      state,
      latest: { pointer: 'latest', runId: latest },
      storage: new LocalStorage(dir),
      stateStore: studyStateStore(new LocalStorage(dir)),
      root: dir,
      log,
      startedAt: Date.now(),
    });
  } finally {
    client.close();
  }
}

describe('planRun', () => {
  it("lists the studies a run covers, its shard's only", async () => {
    await withTempDir(async (dir) => {
      const all = await plan(dir, { full: true });
      expect('listing' in all && all.listing.studies.map((s) => s.id).sort()).toEqual(
        sandbox
          .studies()
          .map((s) => s.id)
          .sort(),
      );
      const shard = { index: 1, count: 2 };
      const own = await plan(dir, { full: true, shard });
      expect('listing' in own && own.listing.studies.map((s) => s.id).sort()).toEqual(
        sandbox
          .studies()
          .filter((s) => inShard(s.id, shard))
          .map((s) => s.id)
          .sort(),
      );
    });
  });

  it("is a dry run's result: the plan, each study's responses", async () => {
    await withTempDir(async (dir) => {
      const planned = await plan(dir, { dryRun: true });
      expect('result' in planned && planned.result.status).toBe('planned');
      const studies = 'result' in planned ? (planned.result.plan?.studies ?? []) : [];
      expect(studies.map((s) => [s.link_id, s.expected_responses, s.since]).sort()).toEqual(
        sandbox
          .studies()
          .map((s) => [s.link_id, sandbox.responses(s.link_id).length, null])
          .sort(),
      );
    });
  });

  it('finds nothing new from the first pages, before writing anything, when no study changed', async () => {
    await withTempDir(async (dir) => {
      const watermark = new Date(Date.now() + 60_000).toISOString();
      const state: State = { version: 1, studies: {} };
      for (const study of sandbox.studies()) {
        state.studies[study.id] = {
          link_id: study.link_id,
          watermark,
          last_run: 'R1',
          last_run_at: watermark,
        };
      }
      const unchanged = await plan(dir, {}, state, 'R1');
      expect('result' in unchanged && unchanged.result.status).toBe('unchanged');
      expect('result' in unchanged && unchanged.result.unchanged?.sinceRun).toBe('R1');
      // A study the state does not know yet is a reason to write a run: no result, the listing.
      const { [sandbox.studies()[0]!.id]: _, ...fewer } = state.studies;
      const changed = await plan(dir, {}, { version: 1, studies: fewer }, 'R1');
      expect('listing' in changed).toBe(true);
    });
  });
});
