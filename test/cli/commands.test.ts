import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { exitOf, runCli, spawnCli, workdir } from '../helpers/cli.ts';

describe('help and usage', () => {
  it('prints --help for the tool and each command, exit 0', async () => {
    const commands = ['', 'run', 'studies', 'sandbox', 'validate', 'verify'];
    const results = await Promise.all(
      commands.map((command) => runCli([...(command ? [command] : []), '--help'])),
    );
    for (const [index, result] of results.entries()) {
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(`study-export ${commands[index]}`);
    }
    expect(results[1]?.stdout).toContain('--dry-run');
    expect(results[1]?.stdout).toContain('--no-media');
    expect(results[3]?.stdout).toContain('--faults');
    expect(results[5]?.stdout).toContain('run_dir');
  });

  it('rejects an unknown option and a bad --since with exit 2 and one line plus a hint', async () => {
    const [unknown, since] = await Promise.all([
      runCli(['run', '--bogus']),
      runCli(['run', '--since', 'last tuesday']),
    ]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(
      'study-export: unknown option --bogus\n  hint: see `study-export run --help`\n',
    );
    expect(since.code).toBe(2);
    expect(since.stderr).toContain('--since: expected an ISO 8601 date or timestamp');
    expect(since.stdout).toBe('');
  });
});

describe('validate', () => {
  it('accepts a shipped pipeline and shows what it resolved, without secrets', async () => {
    const result = await runCli(['validate', '--pipeline', 'nightly-incremental'], {
      env: { STUDY_API_BASE_URL: 'https://api.example.com', STUDY_API_KEY: 'sk-very-secret-1' },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('pipelines/nightly-incremental.yaml: valid');
    expect(result.stdout).toContain('https://api.example.com (key from STUDY_API_KEY: set)');
    expect(result.stdout).not.toContain('sk-very-secret-1');
  });

  it('names file, key, expected and found for a bad file, exit 2', async () => {
    const work = await workdir('name: bad\nsource:\n  per_page: ten\n');
    try {
      const result = await runCli(['validate'], { cwd: work.dir });
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(
        'study-export: pipeline.yaml: source.per_page: expected an integer from 1 to 10000, found "ten"\n',
      );
    } finally {
      await work.cleanup();
    }
  });

  it('names the missing key variable for a real base_url, exit 2', async () => {
    const result = await runCli(['validate', '--pipeline', 'nightly-incremental'], {
      env: { STUDY_API_BASE_URL: 'https://api.example.com' },
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('environment variable STUDY_API_KEY is not set');
  });
});

describe('sandbox', () => {
  it('prints its address as the first JSON line, serves, and exits 0 on SIGTERM', async () => {
    const { child, firstLine } = await spawnCli([
      'sandbox',
      '--port',
      '0',
      '--studies',
      '2',
      '--responses',
      '2',
    ]);
    try {
      const info = JSON.parse(firstLine) as { base_url: string; api_key: string };
      expect(info.base_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const reply = await fetch(`${info.base_url}/api/public/list_surveys`, {
        headers: { 'x-api-key': info.api_key },
      });
      expect(reply.status).toBe(200);
      expect(Array.isArray(await reply.json())).toBe(true);
      child.kill('SIGTERM');
      expect(await exitOf(child)).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});

describe('studies and errors against a source', () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await startSandbox({ studies: 2, responses: 3 });
  });
  afterAll(async () => {
    await sandbox.close();
  });

  it('studies --json lists the embedded sandbox with responses from desc', async () => {
    const result = await runCli(['studies', '--pipeline', 'demo', '--json']);
    expect(result.code).toBe(0);
    const rows = JSON.parse(result.stdout) as Record<string, unknown>[];
    expect(rows.length).toBeGreaterThan(0);
    expect(Object.keys(rows[0]!)).toEqual(['id', 'link_id', 'title', 'created_at', 'responses']);
    expect(typeof rows[0]!.responses).toBe('number');
  });

  it('studies prints an aligned table from a running service', async () => {
    const work = await workdir(`name: t\nsource:\n  base_url: ${sandbox.base_url}\n  api_key_env: MY_KEY\n`);
    try {
      const result = await runCli(['studies'], { cwd: work.dir, env: { MY_KEY: sandbox.api_key } });
      expect(result.code).toBe(0);
      const lines = result.stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^id\s+link_id\s+title\s+created_at\s+responses$/);
      const study = sandbox.studies()[0]!;
      expect(lines[1]?.indexOf(study.link_id)).toBe(lines[0]?.indexOf('link_id'));
      expect(lines.at(-1)).toMatch(/^\d+ stud(y|ies)$/);
    } finally {
      await work.cleanup();
    }
  });

  it('a wrong key exits 2 naming the variable, never the key', async () => {
    const work = await workdir(`name: t\nsource:\n  base_url: ${sandbox.base_url}\n  retries: 0\n`);
    try {
      const result = await runCli(['studies'], { cwd: work.dir, env: { STUDY_API_KEY: 'wrong-key-4242' } });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('STUDY_API_KEY');
      expect(result.stderr).toMatch(/401|403/);
      expect(result.stderr + result.stdout).not.toContain('wrong-key-4242');
    } finally {
      await work.cleanup();
    }
  });

  it('an unreachable base_url says which URL and why, exit 1 (an outage, not a configuration error)', async () => {
    const work = await workdir('name: t\nsource:\n  base_url: http://127.0.0.1:9\n  retries: 0\n');
    try {
      const result = await runCli(['studies'], { cwd: work.dir, env: { STUDY_API_KEY: 'k-123456' } });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('the service is unreachable');
      expect(result.stderr).toContain('http://127.0.0.1:9/api/public/list_surveys');
      expect(result.stderr).toContain('ECONNREFUSED');
      expect(result.stderr).not.toContain('k-123456');
    } finally {
      await work.cleanup();
    }
  });
});
