/**
 * Temporary files (listing spills, media bodies) live in one scratch folder per run under
 * the OS temp directory, removed whichever way the run ends: success, an error, SIGINT,
 * SIGTERM; what a SIGKILLed run left is removed by the next run. Each child gets its own
 * TMPDIR, so "nothing left" means an empty folder.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { cleanEnv, exitOf, repoRoot } from '../helpers/cli.ts';
import { startInterceptingProxy } from '../helpers/intercepting-proxy.ts';
import { KEY_ENV } from '../helpers/run.ts';
import { isDetailPath } from '../helpers/sandbox.ts';

let sandbox: Sandbox;
let dir: string;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 23, studies: 3, responses: 30, latencyMs: 40 });
  dir = await mkdtemp(join(tmpdir(), 'study-export-scratch-test-'));
});
afterAll(async () => {
  await sandbox.close();
  await rm(dir, { recursive: true, force: true });
});

interface Child {
  child: ChildProcess;
  tmp: string;
  stderr: () => string;
}

/** `run` in a child whose TMPDIR is a fresh folder (tsx's compile cache off, so it stays empty). */
async function startRun(name: string, baseUrl: string, tmp?: string): Promise<Child> {
  const childTmp = tmp ?? (await mkdtemp(join(dir, `tmp-${name}-`)));
  const file = join(dir, `${name}.yaml`);
  await writeFile(
    file,
    [
      'name: t',
      `source: { base_url: "${baseUrl}", api_key_env: ${KEY_ENV}, concurrency: 2, retries: 1 }`,
      `output: { dir: "${join(dir, `out-${name}`)}" }`,
      'media: { enabled: true }',
    ].join('\n'),
  );
  const child = spawn(process.execPath, ['bin/study-export.js', 'run', '--config', file], {
    cwd: repoRoot,
    env: cleanEnv({ [KEY_ENV]: sandbox.api_key, TMPDIR: childTmp, TSX_DISABLE_CACHE: '1' }),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  return { child, tmp: childTmp, stderr: () => stderr };
}

/** The run's scratch folder exists and holds a listing spill: temporary files are being made. */
function spilling(tmp: string): boolean {
  if (!existsSync(tmp)) return false;
  return readdirSync(tmp).some((name) => {
    const path = join(tmp, name);
    return /^study-export-\d+-/.test(name) && existsSync(path) && readdirSync(path).length > 0;
  });
}

/** Polls until `condition` holds; children compile TypeScript on start, so allow a minute. */
async function waitFor(condition: () => boolean, what: string): Promise<void> {
  for (const started = Date.now(); Date.now() - started < 60_000; ) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe.concurrent('the scratch folder', () => {
  it('is gone after a complete run', async () => {
    const run = await startRun('success', sandbox.base_url);
    expect(await exitOf(run.child), run.stderr()).toBe(0);
    expect(await readdir(run.tmp)).toEqual([]);
  });

  it('is gone after a run that fails (a refused key on a detail call, exit 2)', async () => {
    let details = 0;
    const proxy = await startInterceptingProxy(sandbox.base_url, (request) => {
      if (!isDetailPath(request.url) || ++details < 10) return undefined;
      return { status: 401, body: '{"error":"unauthorized"}' };
    });
    try {
      const run = await startRun('error', proxy.url);
      expect(await exitOf(run.child), run.stderr()).toBe(2);
      expect(proxy.intercepted()).toBeGreaterThan(0);
      expect(run.stderr()).toMatch(/^study-export: /m);
      expect(await readdir(run.tmp)).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('is gone after %s (exit %i)', async (signal, code) => {
    const run = await startRun(`signal-${signal}`, sandbox.base_url);
    try {
      await waitFor(() => spilling(run.tmp), 'the run to spill a listing');
      run.child.kill(signal);
      expect(await exitOf(run.child)).toBe(code);
      expect(await readdir(run.tmp)).toEqual([]);
    } finally {
      if (run.child.exitCode === null) run.child.kill('SIGKILL');
    }
  });

  it('left by a SIGKILLed run is removed by the next run', async () => {
    const killed = await startRun('killed', sandbox.base_url);
    await waitFor(() => spilling(killed.tmp), 'the run to spill a listing');
    killed.child.kill('SIGKILL');
    await exitOf(killed.child);
    const left = await readdir(killed.tmp);
    expect(left).toHaveLength(1);
    expect(left[0]).toMatch(new RegExp(`^study-export-${killed.child.pid}-`));

    const next = await startRun('after-kill', sandbox.base_url, killed.tmp);
    expect(await exitOf(next.child), next.stderr()).toBe(0);
    expect(await readdir(killed.tmp)).toEqual([]);
  });

  it('of an earlier version (study-export-spill-*, no owner) is removed by the next run once a day old', async () => {
    const tmp = await mkdtemp(join(dir, 'tmp-old-spill-'));
    const aged = async (name: string, ageMs: number) => {
      await mkdir(join(tmp, name));
      await writeFile(join(tmp, name, 'spill.jsonl'), '{"answers":{"Q":"a respondent\'s words"}}\n');
      const at = new Date(Date.now() - ageMs);
      await utimes(join(tmp, name, 'spill.jsonl'), at, at);
      await utimes(join(tmp, name), at, at);
    };
    await aged('study-export-spill-Old123', 30 * 3_600_000);
    await aged('study-export-spill-New123', 60_000);
    const run = await startRun('old-spill', sandbox.base_url, tmp);
    expect(await exitOf(run.child), run.stderr()).toBe(0);
    expect(await readdir(tmp)).toEqual(['study-export-spill-New123']);
  });
});
