/**
 * What an incremental pipeline tells the person running it: a night with nothing new says so
 * in one line (and one JSON event) and exits 0 without writing a run; the dry run counts what
 * changed since the watermark, the number the next run then exports; an interrupt names the
 * run latest still names, or says there is none yet.
 */
import { existsSync, readdirSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { exitOf, runCli, sandboxPipeline, spawnCli, workdir } from '../helpers/cli.ts';
import { waitFor } from '../helpers/run.ts';

let sandbox: Sandbox;
let work: { dir: string; cleanup: () => Promise<void> };
const env = () => ({ STUDY_API_KEY: sandbox.api_key });
const root = () => path.join(work.dir, 'out', 'nightly');
const latest = async () => (await readFile(path.join(root(), 'latest'), 'utf8')).trim();

beforeEach(async () => {
  sandbox = await startSandbox({ seed: 8, studies: 4, responses: 4 });
  work = await workdir(sandboxPipeline(sandbox.base_url, { name: 'nightly', media: false }));
});
afterEach(async () => {
  await sandbox.close();
  await work.cleanup();
});

describe('an incremental pipeline on the command line', () => {
  it('a second run with nothing new prints one line, writes no run, exits 0; as JSON too', async () => {
    const first = await runCli(['run'], { cwd: work.dir, env: env() });
    expect(first.code, first.stderr).toBe(0);
    const firstId = await latest();
    const studies = sandbox.studies().length;

    const second = await runCli(['run'], { cwd: work.dir, env: env() });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout.trim()).toBe(
      `nothing new since run ${firstId} (${studies} studies checked, ${1 + studies} requests): no run written, latest still names ${firstId}`,
    );
    expect(await readdir(path.join(root(), 'runs'))).toEqual([firstId]);
    expect(await latest()).toBe(firstId);

    const json = await runCli(['run', '--log-format', 'json'], { cwd: work.dir, env: env() });
    expect(json.code, json.stderr).toBe(0);
    const events = json.stderr
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(events.at(-1)).toMatchObject({
      event: 'summary',
      status: 'unchanged',
      exit_code: 0,
      run_dir: null,
      latest: firstId,
      studies_checked: studies,
      requests: 1 + studies,
      message: expect.stringContaining(`nothing new since run ${firstId}`),
    });
    expect(await readdir(path.join(root(), 'runs'))).toEqual([firstId]);
  });

  it('--dry-run counts what changed since the watermark, and the next run exports exactly that many', async () => {
    const first = await runCli(['run'], { cwd: work.dir, env: env() });
    expect(first.code, first.stderr).toBe(0);
    const [study, other] = sandbox.studies();
    const responses = sandbox.responses(study!.link_id);
    sandbox.touchResponse(study!.link_id, responses[0]!.id, new Date(Date.now() + 1000));
    sandbox.addResponse(study!.link_id);
    sandbox.addResponse(other!.link_id);

    const plan = await runCli(['run', '--dry-run'], { cwd: work.dir, env: env() });
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('3 changed since their watermark, listed now');
    // Each study's row: its desc total, then what the run would export.
    const rowOf = (linkId: string) => plan.stdout.split('\n').find((line) => line.includes(` ${linkId} `));
    expect(rowOf(study!.link_id)).toMatch(/\s2 changed\s/);
    expect(rowOf(other!.link_id)).toMatch(/\s1 changed\s/);
    expect(rowOf(sandbox.studies()[2]!.link_id)).toMatch(/\s0 changed\s/);
    expect(await readdir(path.join(root(), 'runs'))).toHaveLength(1);

    const next = await runCli(['run'], { cwd: work.dir, env: env() });
    expect(next.code, next.stderr).toBe(0);
    expect(next.stdout).toMatch(/^\s+responses\s+3\s/m);
    const exported = (await readFile(path.join(root(), 'runs', await latest(), 'responses.csv'), 'utf8'))
      .trim()
      .split('\r\n');
    expect(exported).toHaveLength(1 + 3);
  });

  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('%s after a complete run names the run latest still names, exit %i', async (signal, code) => {
    const first = await runCli(['run'], { cwd: work.dir, env: env() });
    expect(first.code, first.stderr).toBe(0);
    const firstId = await latest();
    sandbox.addResponse(sandbox.studies()[0]!.link_id);
    sandbox.setFaults('latency=300ms');
    const { child } = await spawnCli(['run'], { cwd: work.dir, env: env(), stream: 'stderr' });
    try {
      let stderr = '';
      child.stderr!.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
      });
      const runs = path.join(root(), 'runs');
      await waitFor(() => existsSync(runs) && readdirSync(runs).length > 1, 'the run folder');
      child.kill(signal);
      expect(await exitOf(child)).toBe(code);
      expect(stderr).toContain(
        `study-export: interrupted by ${signal}: this run was not committed and its temporary folder is removed; latest still names run ${firstId}`,
      );
      expect(await latest()).toBe(firstId);
      expect(await readdir(runs)).toEqual([firstId]);
    } finally {
      sandbox.setFaults(null);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
