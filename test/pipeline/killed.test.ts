/**
 * A run killed mid-way (SIGKILL, no chance to clean up) leaves no run visible, no `latest`
 * and no state; the rerun exports everything exactly once.
 */
import { spawn } from 'node:child_process';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifyRun } from '../../src/pipeline/verify.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { readHyparquet } from '../load/readers.ts';
import { detailRequests, KEY_ENV, runAgainst, sandboxConfig, waitFor, withTempDir } from './helpers.ts';

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
    const pipelineFile = join(dir, 'killed.yaml');
    await writeFile(
      pipelineFile,
      [
        'name: test',
        `source: { base_url: "${sandbox.base_url}", api_key_env: ${KEY_ENV}, concurrency: 2 }`,
        `output: { dir: "${out}" }`,
        'media: { enabled: true }',
      ].join('\n'),
    );
    const child = spawn(process.execPath, ['bin/study-export.js', 'run', '--config', pipelineFile], {
      env: { ...process.env, [KEY_ENV]: sandbox.api_key, CI: 'true' },
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    await waitFor(() => detailRequests(sandbox) >= 30, 'the child to fetch 30 details');
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');

    const runs = await readdir(join(out, 'test', 'runs'));
    expect(runs.filter((name) => !name.startsWith('.tmp-'))).toEqual([]);
    const pipelineFiles = await readdir(join(out, 'test'));
    expect(pipelineFiles).not.toContain('latest');
    expect(pipelineFiles).not.toContain('state.json');

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
