/**
 * A run killed mid-way (SIGKILL, no chance to clean up) leaves no run visible, no `latest`
 * and no state; the rerun exports everything exactly once.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifyRun } from '../../src/load/verify.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readHyparquet } from '../helpers/readers.ts';
import { detailRequests, runAgainst, sandboxConfig, spawnRun, waitFor } from '../helpers/run.ts';

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 5, studies: 3, responses: 40, latencyMs: 15 });
});
afterAll(async () => {
  await sandbox.close();
});

it('a run killed mid-way leaves nothing visible and the rerun loses nothing', async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, 'out');
    const { child, exited } = await spawnRun(sandbox, dir, out);
    await waitFor(() => detailRequests(sandbox) >= 30, 'the child to fetch 30 details');
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');

    const runs = await readdir(join(out, 'test', 'runs'));
    expect(runs.filter((name) => !name.startsWith('.tmp-'))).toEqual([]);
    const pipelineFiles = await readdir(join(out, 'test'));
    expect(pipelineFiles).not.toContain('latest');
    expect(pipelineFiles).not.toContain('state');

    const rerun = await runAgainst(sandbox, sandboxConfig(sandbox, out, { media: { enabled: true } }));
    expect(rerun.status).toBe('complete');
    expect(await readdir(join(out, 'test', 'runs'))).toEqual([rerun.runDir!.split('/').pop()]);
    const expected = sandbox.studies().flatMap((s) => sandbox.responses(s.link_id).map((r) => r.id));
    const ids = (await readHyparquet(join(rerun.runDir!, 'responses.parquet'))).map(
      (r) => r.response_id as string,
    );
    expect(ids.sort()).toEqual(expected.sort());
    expect((await verifyRun(rerun.runDir!)).problems).toEqual([]);
  });
});
