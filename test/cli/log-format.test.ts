import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { runCli, sandboxPipeline, workdir } from '../helpers/cli.ts';

/** Every stderr line parsed as JSON: a line that is not one object fails the test. */
function events(stderr: string): Record<string, unknown>[] {
  const lines = stderr.split('\n').filter((line) => line !== '');
  expect(lines.length).toBeGreaterThan(0);
  return lines.map((line) => {
    const event: unknown = JSON.parse(line);
    expect(event, line).toMatchObject({ time: expect.any(String), event: expect.any(String) });
    return event as Record<string, unknown>;
  });
}

/** No key, and no signed URL (query string, signature or expiry), anywhere in the log. */
function expectNoSecrets(stderr: string, sandbox: Sandbox): void {
  expect(stderr).not.toContain(sandbox.api_key);
  expect(stderr).not.toMatch(/sig=|expires=/);
  for (const host of [sandbox.storage_url, sandbox.stream_url]) expect(stderr).not.toContain(`${host}?`);
}

describe('--log-format json', () => {
  let sandbox: Sandbox;
  let work: { dir: string; cleanup: () => Promise<void> };
  const env = () => ({ STUDY_API_KEY: sandbox.api_key });

  beforeAll(async () => {
    sandbox = await startSandbox({ studies: 6, responses: 2 });
    work = await workdir(sandboxPipeline(sandbox.base_url, { name: 'json-log', retries: 1 }));
  });

  afterAll(async () => {
    await sandbox.close();
    await work.cleanup();
  });

  it('writes one JSON object per event on stderr: progress, retries, studies, failures, summary', async () => {
    const [study] = sandbox.studies();
    // An API retry, and recordings whose host keeps failing (their signed URLs must not show).
    sandbox.overrideNext({ listener: 'api', pathIncludes: study!.link_id }, { status: 503, body: 'busy' });
    sandbox.overrideNext({ listener: 'storage' }, { status: 500, body: 'down' }, 1000);
    sandbox.overrideNext({ listener: 'stream' }, { status: 500, body: 'down' }, 1000);

    const result = await runCli(['run', '--log-format', 'json'], { cwd: work.dir, env: env() });
    expect(result.code).toBe(3);
    const log = events(result.stderr);
    const kinds = new Set(log.map((event) => event.event));
    for (const kind of ['stage_start', 'progress', 'retry', 'study_done', 'summary'])
      expect(kinds).toContain(kind);

    const retry = log.find((event) => event.event === 'retry');
    expect(retry).toMatchObject({
      reason: '503',
      attempt: 1,
      url: expect.stringContaining(sandbox.base_url),
    });
    const studies = log.filter((event) => event.event === 'study_done');
    expect(studies.map((event) => event.link_id).sort()).toEqual(
      sandbox
        .studies()
        .map((s) => s.link_id)
        .sort(),
    );
    const failed = studies.reduce((sum, event) => sum + Number(event.media_failed), 0);
    expect(failed).toBeGreaterThan(0);
    const summary = log.at(-1);
    expect(summary).toMatchObject({
      event: 'summary',
      status: 'partial',
      exit_code: 3,
      media_failed: failed,
    });
    expect(summary?.tables).toMatchObject({ responses: 2 * studies.length });
    expect(String(summary?.run_dir)).toMatch(/^out[/\\]json-log[/\\]runs[/\\]\d{8}T\d{6}Z$/);
    expectNoSecrets(result.stderr, sandbox);
    // The human summary still goes to stdout.
    expect(result.stdout).toMatch(/^run finished with problems \(partial\)/);
  });

  it('reports warnings as they happen and errors as one JSON line with their exit code', async () => {
    const [study] = sandbox.studies();
    sandbox.renameStudy(study!.link_id, `${study!.link_id}-renamed`);
    sandbox.setFaults(null);
    const renamed = await runCli(['run', '--log-format=json', '--no-media'], { cwd: work.dir, env: env() });
    expect(renamed.code).toBe(0);
    const warning = events(renamed.stderr).find((event) => event.event === 'warning');
    expect(warning).toMatchObject({
      code: 'study_renamed',
      study_id: study!.id,
      link_id: `${study!.link_id}-renamed`,
    });
    expectNoSecrets(renamed.stderr, sandbox);

    const refused = await runCli(['run', '--log-format', 'json'], {
      cwd: work.dir,
      env: { STUDY_API_KEY: `${sandbox.api_key}-wrong` },
    });
    expect(refused.code).toBe(2);
    const [error, ...rest] = events(refused.stderr);
    expect(rest).toEqual([]);
    expect(error).toMatchObject({ event: 'error', code: 'E_AUTH', exit_code: 2, hint: expect.any(String) });
    expect(refused.stderr).not.toContain(sandbox.api_key);

    const usage = await runCli(['run', '--log-format', 'json', '--bogus'], { cwd: work.dir });
    expect(usage.code).toBe(2);
    expect(events(usage.stderr)).toEqual([
      expect.objectContaining({ event: 'error', code: 'E_USAGE', message: 'unknown option --bogus' }),
    ]);
  });
});
