/** Running the pipeline in-process against a sandbox on loopback. */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { parsePipelineConfig } from '../../src/config/load.ts';
import type { PipelineConfig } from '../../src/config/schema.ts';
import type { Manifest } from '../../src/output/manifest.ts';
import { silentReporter } from '../../src/pipeline/progress.ts';
import { type RunOptions, type RunResult, runPipeline } from '../../src/pipeline/run.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { isObjectStorage, openStorage } from '../../src/storage/index.ts';
import { repoRoot } from './cli.ts';
import { withTempDir } from './environment.ts';
import { validateDataPackage } from './frictionless.ts';
import { isDetailPath } from './sandbox.ts';

export const KEY_ENV = 'TEST_STUDY_API_KEY';

export function sandboxConfig(
  sandbox: Sandbox,
  out: string,
  overrides: Record<string, unknown> = {},
): PipelineConfig {
  const base = {
    name: 'test',
    source: { base_url: sandbox.base_url, api_key_env: KEY_ENV, retries: 3, timeout_ms: 10_000 },
    output: { dir: out },
    media: { enabled: false },
  };
  return parsePipelineConfig(deepMerge(base, overrides), 'test pipeline');
}

/**
 * Runs the pipeline; every run it commits is then validated strictly by the Frictionless
 * reference library (test/helpers/frictionless.ts), so no test produces a package it rejects.
 */
export async function runAgainst(
  sandbox: Sandbox,
  config: PipelineConfig,
  options: Partial<Omit<RunOptions, 'config'>> = {},
): Promise<RunResult> {
  const result = await runPipeline({
    config,
    configFile: 'test pipeline',
    reporter: silentReporter,
    env: { [KEY_ENV]: sandbox.api_key },
    ...options,
  });
  if (result.runDir) {
    const runDir = result.runDir;
    const { errors } = isObjectStorage(runDir)
      ? await withTempDir(async (dir) => {
          await downloadRun(runDir, config, dir);
          return validateDataPackage(dir);
        })
      : await validateDataPackage(runDir);
    if (errors.length > 0)
      throw new Error(`datapackage.json of ${result.runDir} is rejected:\n${errors.join('\n')}`);
  }
  return result;
}

/** A run in a bucket copied into `dir`, for readers that read local files. */
async function downloadRun(runDir: string, config: PipelineConfig, dir: string): Promise<void> {
  const run = await openStorage(runDir, config.output.s3);
  for await (const file of run.list('')) {
    const path = join(dir, ...file.path.split('/'));
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, (await run.read(file.path)) ?? Buffer.alloc(0));
  }
}

export async function readManifest(runDir: string): Promise<Manifest> {
  return JSON.parse(await readFile(join(runDir, 'manifest.json'), 'utf8')) as Manifest;
}

/** Requests on the API listener since `from` (an index into sandbox.requests). */
export function apiRequestsSince(sandbox: Sandbox, from: number) {
  return sandbox.requests.slice(from).filter((r) => r.listener === 'api');
}

function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [key, value] of Object.entries(b)) {
    const current = out[key];
    out[key] =
      isPlainObject(current) && isPlainObject(value) ? deepMerge(current, value) : (value as unknown);
  }
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Resolves once `condition` holds; fails after about ten seconds. */
export async function waitFor(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Whether the process is stopped (SIGSTOP): state T in /proc. */
export async function isStopped(pid: number): Promise<boolean> {
  return /^State:\s+T/m.test(await readFile(`/proc/${pid}/status`, 'utf8').catch(() => ''));
}

/** Waits until the process is stopped. */
export async function stopped(pid: number): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (await isStopped(pid)) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`process ${pid} never stopped`);
}

/** Lets a process stopped at a stop point go on, at that point and every later one, until it exits. */
export async function letFinish(child: ChildProcess, exit: Promise<number | null>): Promise<number | null> {
  let done = false;
  void exit.then(() => {
    done = true;
  });
  while (!done) {
    if (await isStopped(child.pid as number)) child.kill('SIGCONT');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return exit;
}

/** Detail (single-response) requests the sandbox has answered since `from`. */
export function detailRequests(sandbox: Sandbox, from = 0): number {
  return sandbox.requests.slice(from).filter((r) => r.listener === 'api' && isDetailPath(r.path)).length;
}

/**
 * Starts `study-export run` as a child process (so a test can kill it) with a pipeline file
 * written into `dir` that points at the sandbox; `exited` resolves with the ending signal.
 */
export async function spawnRun(
  sandbox: Sandbox,
  dir: string,
  out: string,
  options: {
    media?: string;
    args?: string[] /** The pipeline file's output, instead of { dir: out }. */;
    output?: string;
    /** Extra environment of the run (STUDY_EXPORT_KILL_AT). */
    env?: Record<string, string>;
  } = {},
): Promise<{ child: ChildProcess; exited: Promise<NodeJS.Signals | null> }> {
  const pipelineFile = join(dir, 'killable.yaml');
  await writeFile(
    pipelineFile,
    [
      'name: test',
      `source: { base_url: "${sandbox.base_url}", api_key_env: ${KEY_ENV}, concurrency: 2 }`,
      `output: ${options.output ?? `{ dir: "${out}" }`}`,
      `media: ${options.media ?? '{ enabled: true }'}`,
    ].join('\n'),
  );
  const child = spawn(
    process.execPath,
    ['bin/study-export.js', 'run', '--config', pipelineFile, ...(options.args ?? [])],
    {
      cwd: repoRoot,
      env: { ...process.env, [KEY_ENV]: sandbox.api_key, CI: 'true', ...options.env },
      stdio: 'ignore',
    },
  );
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on('exit', (_code, signal) => resolve(signal)),
  );
  return { child, exited };
}

/**
 * Every file under `dir` with its sha256 and modification time (a rewrite changes the time),
 * and every folder's, `dir`'s own included, with its modification time: a file created and
 * removed again (a lock, a staged run) changes its folder's.
 */
export async function snapshot(dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = { '.': `${(await stat(dir)).mtimeMs}` };
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    if (entry.isDirectory()) files[relative(dir, path)] = `${(await stat(path)).mtimeMs}`;
    if (!entry.isFile()) continue;
    const digest = createHash('sha256')
      .update(await readFile(path))
      .digest('hex');
    files[relative(dir, path)] = `${digest} ${(await stat(path)).mtimeMs}`;
  }
  return files;
}
