/**
 * A run killed with SIGKILL (an OOM kill, a cancelled runner) at several moments leaves its
 * temporary run folder, its scratch folder in $TMPDIR (spilled answers, respondents' text) and
 * its lock; the run after it, which finds nothing new, clears all of them. The same on an
 * s3:// output: the staged run's objects, its marker and the lease.
 */
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { runCli } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';
import { detailRequests, KEY_ENV, spawnRun, waitFor } from '../helpers/run.ts';
import { S3_CREDENTIALS, type S3Server, startS3 } from '../helpers/s3.ts';

let sandbox: Sandbox;
let s3: S3Server;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 5, studies: 3, responses: 40, latencyMs: 15 });
  s3 = await startS3(['exports']);
});
afterAll(async () => {
  await s3?.close();
  await sandbox?.close();
});

/** The run's own scratch folders (and old-style spills) in a $TMPDIR of the test's. */
async function scratchFolders(tmp: string): Promise<string[]> {
  return (await readdir(tmp)).filter((name) => name.startsWith('study-export-'));
}

/** The pipeline file spawnRun writes, run as the following (incremental) run. */
async function runAgain(dir: string, tmp: string, extraEnv: NodeJS.ProcessEnv = {}) {
  return runCli(['run', '--config', join(dir, 'killable.yaml')], {
    env: { [KEY_ENV]: sandbox.api_key, TMPDIR: tmp, ...extraEnv },
  });
}

/** Kills a --full run (it writes whatever it finds): at a named point, or once it fetches details. */
async function killFullRun(
  dir: string,
  out: string,
  tmp: string,
  at: string | null,
  options: { output?: string; env?: Record<string, string> } = {},
) {
  const from = sandbox.requests.length;
  const { child, exited } = await spawnRun(sandbox, dir, out, {
    args: ['--full'],
    ...(options.output ? { output: options.output } : {}),
    env: { TMPDIR: tmp, ...options.env, ...(at ? { STUDY_EXPORT_KILL_AT: at } : {}) },
  });
  if (at === null) {
    await waitFor(() => detailRequests(sandbox, from) >= 30, 'the run to fetch 30 details');
    child.kill('SIGKILL');
  }
  expect(await exited).toBe('SIGKILL');
}

describe('what a killed run leaves, on a folder', () => {
  for (const at of [null, 'current-part-published', 'run-committed', 'current-replaced-removed']) {
    it(`is cleared by the next run with nothing new (killed ${at ?? 'while fetching details'})`, async () => {
      await withTempDir(async (dir) => {
        const out = join(dir, 'out');
        const tmp = join(dir, 'tmp');
        await mkdir(tmp);
        const first = await spawnRun(sandbox, dir, out, { env: { TMPDIR: tmp } });
        expect(await first.exited).toBe(null);
        const root = join(out, 'test');
        expect(await readdir(join(root, 'runs'))).toHaveLength(1);

        await killFullRun(dir, out, tmp, at);
        // What it left: its lock (naming a process that is gone) and its scratch folder; a
        // temporary run folder unless it was killed after its commit.
        const lock = await readFile(join(root, '.lock'), 'utf8');
        expect(Number.parseInt(lock, 10)).toBeGreaterThan(0);
        expect(await scratchFolders(tmp)).not.toEqual([]);
        const temporary = (await readdir(join(root, 'runs'))).filter((name) => name.startsWith('.tmp-'));
        if (at === null || at === 'current-part-published') expect(temporary).toHaveLength(1);

        const next = await runAgain(dir, tmp);
        expect(next, next.stderr).toMatchObject({ code: 0 });
        expect(next.stdout).toMatch(/^nothing new since run /);

        expect((await readdir(join(root, 'runs'))).filter((name) => name.startsWith('.'))).toEqual([]);
        expect(await scratchFolders(tmp)).toEqual([]);
        expect((await readdir(root)).filter((name) => name.startsWith('.lock'))).toEqual([]);
        expect(await readdir(join(root, '.pending')).catch(() => [])).toEqual([]);
      });
    });
  }

  it('leaves alone what a live run holds: its lock, its folder and its scratch', async () => {
    await withTempDir(async (dir) => {
      const out = join(dir, 'out');
      const tmp = join(dir, 'tmp');
      await mkdir(tmp);
      const first = await spawnRun(sandbox, dir, out, { env: { TMPDIR: tmp } });
      expect(await first.exited).toBe(null);
      const root = join(out, 'test');
      // A --full run held (SIGSTOP) once it has its lock, folder and scratch.
      const { child, exited } = await spawnRun(sandbox, dir, out, {
        args: ['--full'],
        env: { TMPDIR: tmp, STUDY_EXPORT_STOP_AT: 'current-part-published' },
      });
      let held: string[] = [];
      for (let i = 0; i < 400 && held.length === 0; i++) {
        held = await readdir(join(root, '.pending')).catch(() => []);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      expect(held).toHaveLength(1);
      const scratch = await scratchFolders(tmp);
      expect(scratch).not.toEqual([]);
      const lock = await readFile(join(root, '.lock'), 'utf8');

      // Its record makes the next run want the lock, which a live run holds: exit 75, untouched.
      const next = await runAgain(dir, tmp);
      expect(next.code).toBe(75);
      expect(next.stderr).toMatch(
        /another run of this pipeline is in progress \(process \d+ on \S+ since \S+ holds/,
      );
      expect(await readFile(join(root, '.lock'), 'utf8')).toBe(lock);
      expect(await scratchFolders(tmp)).toEqual(scratch);
      expect((await readdir(join(root, 'runs'))).filter((name) => name.startsWith('.tmp-'))).toHaveLength(1);
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
    });
  });
});

describe('what a killed run leaves, on s3://', () => {
  it('is cleared by the next run with nothing new: the staged objects, the marker, the lease, the scratch', async () => {
    await withTempDir(async (dir) => {
      const tmp = join(dir, 'tmp');
      await mkdir(tmp);
      const output = `{ dir: "s3://exports/killed", s3: { endpoint: "${s3.endpoint}" } }`;
      const root = 'killed/test/';
      const first = await spawnRun(sandbox, dir, '', { output, env: { TMPDIR: tmp, ...S3_CREDENTIALS } });
      expect(await first.exited).toBe(null);
      const committed = (await s3.keys('exports', `${root}runs/`)).filter((key) =>
        key.endsWith('/manifest.json'),
      );
      expect(committed).toHaveLength(1);

      await killFullRun(dir, '', tmp, null, { output, env: S3_CREDENTIALS });
      const keys = await s3.keys('exports', root);
      expect(keys).toContain(`${root}.lock`);
      expect(keys.filter((key) => key.startsWith(`${root}.staged/`))).toHaveLength(1);
      expect(await scratchFolders(tmp)).not.toEqual([]);

      const next = await runAgain(dir, tmp, S3_CREDENTIALS);
      expect(next, next.stderr).toMatchObject({ code: 0 });
      expect(next.stdout).toMatch(/^nothing new since run /);
      const after = await s3.keys('exports', root);
      expect(after.filter((key) => key.startsWith(`${root}.staged/`) || key === `${root}.lock`)).toEqual([]);
      const runs = new Set(
        after.filter((key) => key.startsWith(`${root}runs/`)).map((key) => key.split('/')[3]),
      );
      expect([...runs]).toEqual([committed[0]!.split('/')[3]]);
      expect(await scratchFolders(tmp)).toEqual([]);
    });
  });
});
