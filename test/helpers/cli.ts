/** Drives bin/study-export.js as a subprocess, the way users and CI run it. */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';

export const repoRoot = path.resolve(import.meta.dirname, '../..');
const bin = path.join(repoRoot, 'bin', 'study-export.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The test process's environment without anything that would change what the CLI reads. */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true', ...extra };
  for (const name of ['STUDY_API_KEY', 'STUDY_API_BASE_URL', 'DEBUG']) {
    if (!(name in extra)) delete env[name];
  }
  return env;
}

export function runCli(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { cwd: options.cwd ?? repoRoot, env: cleanEnv(options.env), timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Starts a long-running command and resolves with its first line on stdout (or stderr). */
export async function spawnCli(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; stream?: 'stdout' | 'stderr' } = {},
): Promise<{ child: ChildProcess; firstLine: string }> {
  const child = spawn(process.execPath, [bin, ...args], {
    cwd: options.cwd ?? repoRoot,
    env: cleanEnv(options.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines = createInterface({ input: options.stream === 'stderr' ? child.stderr! : child.stdout! });
  const firstLine = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`exited early with ${code}`)));
  });
  return { child, firstLine };
}

export function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** A pipeline file against a sandbox: CSV only, no retries unless asked, media off unless asked. */
export function sandboxPipeline(
  baseUrl: string,
  options: { name: string; retries?: number; incremental?: boolean; media?: boolean },
): string {
  return [
    `name: ${options.name}`,
    'source:',
    `  base_url: ${baseUrl}`,
    `  retries: ${options.retries ?? 0}`,
    ...(options.incremental === undefined ? [] : [`incremental: ${options.incremental}`]),
    'output:',
    '  formats: [csv]',
    ...(options.media === undefined ? [] : ['media:', `  enabled: ${options.media}`]),
    '',
  ].join('\n');
}

/** A temporary working directory with one pipeline file in it. */
export async function workdir(pipeline: string): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'study-export-cli-'));
  await writeFile(path.join(dir, 'pipeline.yaml'), pipeline);
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
