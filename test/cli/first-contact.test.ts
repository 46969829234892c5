/**
 * A newcomer's first minutes, as the command line answers them: a misspelt command, a folder
 * that is not a run, the studies' times, the sandbox as a service to point a pipeline at, a
 * sample of it, and a format added after the first run.
 */
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { exitOf, runCli, spawnCli, workdir } from '../helpers/cli.ts';

describe('did you mean, for a command', () => {
  it('names the command a misspelt, shortened or other word meant, wherever it stands', async () => {
    const cases: [string[], string][] = [
      [['rnu'], 'unknown command "rnu" (did you mean run?)'],
      [['stu', '--json'], 'unknown command "stu" (did you mean studies?)'],
      [['ls'], 'unknown command "ls" (did you mean studies?)'],
      [['export', '-p', 'demo'], 'unknown command "export" (did you mean run?)'],
      // An option before the command takes the word as its value.
      [['--full', 'verfy'], 'unknown command "verfy" (did you mean verify?)'],
      [['--log-format', 'text', 'sandbx'], 'unknown command "sandbx" (did you mean sandbox?)'],
      [['frobnicate'], 'unknown command "frobnicate"\n'],
    ];
    const results = await Promise.all(cases.map(([args]) => runCli(args)));
    results.forEach((result, index) => {
      const [args, message] = cases[index]!;
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toContain(`study-export: ${message}`);
    });
  });
});

describe('verify of something that is not a run', () => {
  it('exits 2 (usage), naming what it found', async () => {
    const work = await workdir('name: x\n');
    try {
      await mkdir(join(work.dir, 'empty-run'));
      await writeFile(join(work.dir, 'empty-run', 'notes.txt'), 'not a run\n');
      const [missing, notRun] = await Promise.all([
        runCli(['verify', 'out/x/runs/nope'], { cwd: work.dir }),
        runCli(['verify', 'empty-run'], { cwd: work.dir }),
      ]);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain('study-export: out/x/runs/nope: no such run directory');
      expect(notRun.code).toBe(2);
      expect(notRun.stderr).toContain('study-export: empty-run: not a run: it has no manifest.json');
    } finally {
      await work.cleanup();
    }
  });
});

describe('against a service', () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 61, studies: 3, responses: 4 });
  });
  afterAll(async () => {
    await sandbox.close();
  });

  it('studies prints created_at in UTC, whatever offset the service sends', async () => {
    const work = await workdir(`name: t\nsource:\n  base_url: ${sandbox.base_url}\n`);
    try {
      const result = await runCli(['studies', '--json'], {
        cwd: work.dir,
        env: { STUDY_API_KEY: sandbox.api_key },
      });
      expect(result.code).toBe(0);
      const rows = JSON.parse(result.stdout) as { id: string; created_at: string }[];
      const served = sandbox.studies();
      // The sandbox sends offsets other than Z: the test is only worth it while it does.
      expect(served.some((study) => !study.created_at.endsWith('Z'))).toBe(true);
      expect(rows.map((row) => row.created_at)).toEqual(
        served.map((study) => new Date(study.created_at).toISOString()),
      );
      const table = await runCli(['studies'], { cwd: work.dir, env: { STUDY_API_KEY: sandbox.api_key } });
      for (const study of served) expect(table.stdout).toContain(new Date(study.created_at).toISOString());
    } finally {
      await work.cleanup();
    }
  });

  it('run --limit prints a sample run and leaves latest alone; a format added later is filled in', async () => {
    const work = await workdir(
      `name: t\nsource:\n  base_url: ${sandbox.base_url}\n  retries: 0\noutput:\n  formats: [csv]\nmedia:\n  enabled: false\n`,
    );
    const env = { STUDY_API_KEY: sandbox.api_key };
    try {
      const sample = await runCli(['run', '--limit', '2'], { cwd: work.dir, env });
      expect(sample.code).toBe(0);
      expect(sample.stderr).toContain('sample run of t (at most 2 per study)');
      expect(sample.stdout).toMatch(/sample run: out[/\\]t[/\\]runs[/\\]\d{8}T\d{6}Z-sample\n/);
      expect(sample.stdout).toContain(
        '  sample: at most 2 responses of each study (run --limit 2), not the whole export; the state, current/ and latest were left as they were',
      );
      expect((await readdir(join(work.dir, 'out', 't'))).sort()).toEqual(['runs', 'source.json']);

      expect((await runCli(['run'], { cwd: work.dir, env })).code).toBe(0);
      const added = await runCli(['run', '--formats', 'csv,xlsx'], { cwd: work.dir, env });
      expect(added.code).toBe(0);
      expect(added.stdout).toMatch(/^nothing new since run \S+ \(2 studies checked, 3 requests\)/);
      expect(added.stdout).toContain(
        'current/: added 2 xlsx workbooks for the formats added since it was written, from its own data (no request to the service)',
      );

      const zero = await runCli(['run', '--limit', '0'], { cwd: work.dir, env });
      expect(zero.code).toBe(2);
      expect(zero.stderr).toContain('--limit: expected an integer of 1 or more, found "0"');
    } finally {
      await work.cleanup();
    }
  });
});

describe('study-export sandbox', () => {
  it('prints a key that sees every study, and with --print-pipeline a pipeline that runs against it', async () => {
    const { child, firstLine } = await spawnCli([
      'sandbox',
      '--studies',
      '3',
      '--responses',
      '2',
      '--print-pipeline',
    ]);
    try {
      const info = JSON.parse(firstLine) as { base_url: string; api_key: string };
      let printed = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        printed += chunk.toString('utf8');
      });
      const reply = await fetch(`${info.base_url}/api/public/list_surveys`, {
        headers: { 'x-api-key': info.api_key },
      });
      expect(((await reply.json()) as unknown[]).length).toBe(3);
      for (let i = 0; i < 100 && !printed.includes('media:'); i++)
        await new Promise((r) => setTimeout(r, 50));
      expect(printed).toContain(`  base_url: ${info.base_url}\n`);
      expect(printed).not.toContain(info.api_key);

      const work = await workdir('name: unused\n');
      try {
        await mkdir(join(work.dir, 'pipelines'));
        await writeFile(join(work.dir, 'pipelines', 'sandbox.yaml'), printed);
        const result = await runCli(['run', '--pipeline', 'sandbox', '--limit', '1', '--no-media'], {
          cwd: work.dir,
          env: { STUDY_API_KEY: info.api_key },
        });
        expect(result.code).toBe(0);
        // Every study of the three, one response each.
        expect(result.stdout).toMatch(/responses\s+3\b/);
      } finally {
        await work.cleanup();
      }
      child.kill('SIGTERM');
      expect(await exitOf(child)).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
