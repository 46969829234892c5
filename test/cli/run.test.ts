import { existsSync, readdirSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { exitOf, runCli, sandboxPipeline, spawnCli, workdir } from '../helpers/cli.ts';
import { validateDataPackage } from '../helpers/frictionless.ts';
import { waitFor } from '../helpers/run.ts';

/** run against a running sandbox: exit codes 0 (complete), 3 (partial), 1 (failed); dry run; verify. */
describe('run', () => {
  let sandbox: Sandbox;
  let work: { dir: string; cleanup: () => Promise<void> };
  const env = () => ({ STUDY_API_KEY: sandbox.api_key });

  beforeAll(async () => {
    sandbox = await startSandbox({ studies: 2, responses: 3 });
    work = await workdir(
      sandboxPipeline(sandbox.base_url, { name: 'cli-test', incremental: false, media: false }),
    );
  });

  afterAll(async () => {
    await sandbox.close();
    await work.cleanup();
  });

  it('--dry-run prints the plan and writes nothing, exit 0', async () => {
    const result = await runCli(['run', '--dry-run'], { cwd: work.dir, env: env() });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('dry run: nothing was written');
    for (const study of sandbox.studies()) expect(result.stdout).toContain(study.link_id);
    expect(await readdir(work.dir)).toEqual(['pipeline.yaml']);
  });

  it('a complete run exits 0 with the summary on stdout and progress on stderr; verify passes, then fails on a changed file', async () => {
    const result = await runCli(['run'], { cwd: work.dir, env: env() });
    expect(result.stderr).not.toContain('study-export:');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^run complete in /);
    const expected = sandbox
      .studies()
      .reduce((sum, study) => sum + sandbox.responses(study.link_id).length, 0);
    expect(result.stdout).toMatch(new RegExp(`responses\\s+${expected}\\s`));
    const runDir = /^run: (.+)$/m.exec(result.stdout)?.[1];
    expect(runDir).toMatch(/^out[/\\]cli-test[/\\]runs[/\\]\d{8}T\d{6}Z$/);
    expect(result.stderr).toMatch(/^details \d+\/\d+ \(100%\)/m);
    expect(result.stdout + result.stderr).not.toContain(sandbox.api_key);

    const verified = await runCli(['verify', runDir!], { cwd: work.dir });
    expect(verified.code).toBe(0);
    expect(verified.stdout).toMatch(/: ok \(checked /);
    expect((await validateDataPackage(path.join(work.dir, runDir!))).errors).toEqual([]);

    const answers = path.join(work.dir, runDir!, 'answers.csv');
    await writeFile(answers, `${await readFile(answers, 'utf8')}\n`);
    const broken = await runCli(['verify', runDir!], { cwd: work.dir });
    expect(broken.code).toBe(1);
    expect(broken.stdout).toContain('answers.csv');
  });

  it('--formats csv,xlsx writes a workbook per study, listed in the manifest, and verify accepts the run', async () => {
    const result = await runCli(['run', '--formats', 'csv,xlsx'], { cwd: work.dir, env: env() });
    expect(result.code).toBe(0);
    const runDir = path.join(work.dir, /^run: (.+)$/m.exec(result.stdout)![1]!);
    const manifest = JSON.parse(await readFile(path.join(runDir, 'manifest.json'), 'utf8'));
    const workbooks = manifest.files
      .map((f: { path: string }) => f.path)
      .filter((p: string) => p.startsWith('xlsx/'));
    expect(workbooks.sort()).toEqual(
      sandbox
        .studies()
        .map((s) => `xlsx/${s.link_id}.xlsx`)
        .sort(),
    );
    expect((await runCli(['verify', runDir], { cwd: work.dir })).code).toBe(0);
    const refused = await runCli(['run', '--formats', 'xlsx'], { cwd: work.dir, env: env() });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      '--formats: xlsx needs csv or parquet beside it, e.g. --formats csv,xlsx',
    );
  });

  it('a rejected record makes the run partial, exit 3', async () => {
    const study = sandbox.studies()[0]!;
    const response = sandbox.responses(study.link_id)[0]!;
    sandbox.mutateListItem(study.link_id, response.id, (item) => ({ ...item, created_at: 'not a time' }));
    const result = await runCli(['run'], { cwd: work.dir, env: env() });
    expect(result.code).toBe(3);
    expect(result.stdout).toContain('run finished with problems (partial)');
    expect(result.stdout).toMatch(/rejects: [1-9]/);
  });

  it('a service that keeps failing fails the run, exit 1, nothing committed', async () => {
    sandbox.setFaults('5xx=1');
    try {
      const result = await runCli(['run', '--out', 'failed-out'], { cwd: work.dir, env: env() });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^study-export: .*list_surveys/m);
      expect(result.stdout).toBe('');
      await expect(readFile(path.join(work.dir, 'failed-out', 'cli-test', 'latest'))).rejects.toThrow();
    } finally {
      sandbox.setFaults(null);
    }
  });

  it.each([
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const)(
    '%s during a run stops it, says nothing was committed, leaves no folder or lock, exit %i',
    async (signal, code) => {
      sandbox.setFaults('latency=300ms');
      const out = `interrupted-${signal}`;
      const { child } = await spawnCli(['run', '--out', out], {
        cwd: work.dir,
        env: env(),
        stream: 'stderr',
      });
      try {
        let stderr = '';
        child.stderr!.on('data', (chunk: Buffer) => {
          stderr += chunk.toString('utf8');
        });
        const root = path.join(work.dir, out, 'cli-test');
        // Interrupted once the run has its temporary folder and holds the lock.
        const runs = path.join(root, 'runs');
        await waitFor(() => existsSync(runs) && readdirSync(runs).length > 0, 'the run folder');
        expect(existsSync(path.join(root, '.lock'))).toBe(true);
        child.kill(signal);
        expect(await exitOf(child)).toBe(code);
        // The first run of this output: there is no run for latest to name.
        expect(stderr).toContain(
          `study-export: interrupted by ${signal}: this run was not committed and its temporary folder is removed; there is no complete run yet (no latest)`,
        );
        expect(stderr).not.toContain('previous');
        await expect(readFile(path.join(root, 'latest'))).rejects.toThrow();
        expect(await readdir(runs)).toEqual([]);
        expect(existsSync(path.join(root, '.lock'))).toBe(false);
      } finally {
        sandbox.setFaults(null);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
    },
  );
});
