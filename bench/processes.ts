/**
 * Child processes of the benchmark: the sandbox (so its CPU does not share the measured
 * process's event loop) and each measured step (so each gets its own peak RSS).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('..', import.meta.url));

export interface SandboxInfo {
  base_url: string;
  api_key: string;
  storage_url: string;
  stream_url: string;
}

export interface SandboxProcess {
  info: SandboxInfo;
  stop(): Promise<void>;
}

export interface SandboxSpec {
  studies: number;
  responses: number;
  latencyMs: number;
  mediaScale?: number;
  seed?: number;
}

/** Starts `study-export sandbox` and reads its first stdout line (addresses and key). */
export async function startSandboxProcess(spec: SandboxSpec): Promise<SandboxProcess> {
  const args = [
    'bin/study-export.js',
    'sandbox',
    '--port',
    '0',
    '--studies',
    String(spec.studies),
    '--responses',
    String(spec.responses),
    '--latency-ms',
    String(spec.latencyMs),
    '--seed',
    String(spec.seed ?? 7),
  ];
  if (spec.mediaScale !== undefined) args.push('--media-scale', String(spec.mediaScale));
  const child = spawn(process.execPath, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const first = await Promise.race([
    once(lines, 'line').then(([line]) => line as string),
    once(child, 'exit').then(([code]) => {
      throw new Error(`sandbox exited with code ${code} before printing its address`);
    }),
  ]);
  return {
    info: JSON.parse(first) as SandboxInfo,
    stop: () => stopChild(child),
  };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

/** Steps that run study-export's own code: they get the node flags the bin runs with. */
const productSteps = new Set(['export', 'replay', 'media', 'archive', 'erase', 'privacy-handoff']);

/**
 * The flags bin/study-export.js re-executes node with (its `exec node … "$0"` line), so a
 * measured step runs under the same heap settings as `study-export run`.
 */
export function productNodeFlags(): string[] {
  const bin = readFileSync(join(repoRoot, 'bin', 'study-export.js'), 'utf8');
  const flags = /^':' \/\/; exec node (.*?) "\$0" "\$@"$/m.exec(bin)?.[1];
  if (flags === undefined) throw new Error('bench: bin/study-export.js has no `exec node … "$0" "$@"` line');
  return flags.split(/\s+/).filter(Boolean);
}

/**
 * Runs bench/child.ts with one step and its input (steps of study-export's own code under
 * the bin's node flags); resolves with the JSON object the child
 * prints on its last stdout line. The child's stderr is passed through.
 */
export async function runStep<T>(step: string, input: unknown, nodeArgs: string[] = []): Promise<T> {
  const productFlags = productSteps.has(step) ? productNodeFlags() : [];
  const args = [
    ...productFlags,
    ...nodeArgs,
    '--import',
    'tsx',
    'bench/child.ts',
    step,
    JSON.stringify(input),
  ];
  const child = spawn(process.execPath, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout?.setEncoding('utf8');
  child.stdout?.on('data', (chunk: string) => {
    stdout += chunk;
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  const last = stdout.trim().split('\n').pop() ?? '';
  if (code !== 0) throw new Error(`bench step ${step} exited with code ${code}: ${last}`);
  return JSON.parse(last) as T;
}

/** The first visible study whose transcript carries video. */
export async function videoStudy(sandbox: SandboxInfo): Promise<{ id: string; link_id: string }> {
  const get = async (path: string) =>
    (await (
      await fetch(`${sandbox.base_url}/api/public${path}`, { headers: { 'x-api-key': sandbox.api_key } })
    ).json()) as unknown;
  for (const study of (await get('/list_surveys')) as { id: string; link_id: string }[]) {
    const link = encodeURIComponent(study.link_id);
    const [first] = (await get(`/responses/${link}?page=0&per_page=1`)) as { id: string }[];
    if (!first) continue;
    const detail = (await get(`/responses/${link}/${encodeURIComponent(first.id)}`)) as {
      transcript: { video: unknown }[];
    };
    if (detail.transcript.some((row) => row.video !== null)) return study;
  }
  throw new Error('bench: the media sandbox has no visible video study');
}
