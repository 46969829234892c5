/**
 * Two runs of one pipeline at once: the second is refused with exit 75 (EX_TEMPFAIL, "try
 * again later"), naming the holder (process, machine, since when), and writes nothing; the first
 * completes. `describe` meets the same refusal while the run holds the lock.
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { runCli } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';
import { KEY_ENV, letFinish, spawnRun, stopped } from '../helpers/run.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 31, studies: 2, responses: 6 });
});
afterAll(async () => {
  await sandbox.close();
});

it('refuses a second run with exit 75 naming the holder, and the first completes', async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, 'out');
    const lock = join(out, 'test', '.lock');
    // The first run, held (SIGSTOP) while it publishes: it holds the lock.
    const { child } = await spawnRun(sandbox, dir, out, {
      media: '{ enabled: false }',
      env: { STUDY_EXPORT_STOP_AT: 'current-part-published' },
    });
    const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await stopped(child.pid as number);
    const env = { [KEY_ENV]: sandbox.api_key };
    const pipeline = join(dir, 'killable.yaml');
    const second = await runCli(['run', '--config', pipeline], { env });
    expect(second.code, second.stderr).toBe(75);
    const holder = `process \\d+ on ${hostname()} since \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z`;
    expect(second.stderr).toMatch(
      new RegExp(
        `another run of this pipeline is in progress \\(${holder} holds ${lock.replaceAll('.', '\\.')}\\)`,
      ),
    );
    const json = await runCli(['run', '--config', pipeline, '--log-format', 'json'], { env });
    expect(json.code).toBe(75);
    expect(JSON.parse(json.stderr.trim().split('\n').at(-1) ?? '{}')).toMatchObject({
      event: 'error',
      code: 'E_BUSY',
      exit_code: 75,
    });
    const described = await runCli(['describe', join(out, 'test')]);
    expect(described.code, described.stderr).toBe(75);
    expect(described.stderr).toMatch(new RegExp(`\\(${holder} holds `));
    expect(await letFinish(child, exit)).toBe(0);
    // One run, the first's; the refused ones left nothing behind, and the lock is gone.
    expect(await readdir(join(out, 'test', 'runs'))).toHaveLength(1);
    expect(existsSync(lock)).toBe(false);
  });
});
