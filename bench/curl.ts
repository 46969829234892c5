/**
 * The media baselines, run on the same signed URLs as our media step:
 * - `curl --parallel --parallel-max N` fetching every file to disk (`media_vs_curl`);
 * - the same work as ours done by C tools in sequence, as an archivist would script it:
 *   that curl, then `sha256sum` of every file, then `zip -0` of them into one archive
 *   (`media_vs_same_work`).
 * Each command runs under `sh -c '…; times'`, whose second line is the CPU time of the
 * shell's children: the tools' own CPU, comparable with our process's.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { round } from './report.ts';

/** curl's version when it is installed and has --parallel (7.66+), else null. */
export function curlWithParallel(): string | null {
  const probe = spawnSync('curl', ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) return null;
  const version = /^curl (\d+)\.(\d+)\.(\d+)/.exec(probe.stdout);
  if (!version) return null;
  const [major, minor] = [Number(version[1]), Number(version[2])];
  return major > 7 || (major === 7 && minor >= 66) ? `${version[1]}.${version[2]}.${version[3]}` : null;
}

/** The tools of the same-work pipeline that are not installed (Debian: coreutils, zip). */
export function missingSameWorkTools(): string[] {
  const probes: [string, string[]][] = [
    ['sha256sum', ['--version']],
    ['zip', ['-v']],
  ];
  return probes
    .filter(([tool, args]) => {
      const probe = spawnSync(tool, args, { stdio: 'ignore' });
      return probe.error !== undefined || probe.status !== 0;
    })
    .map(([tool]) => tool);
}

interface Timed {
  ms: number;
  /** User + system CPU of the command (its children as `times` reports them). */
  cpu_ms: number;
}

/** `times` prints "0m0.350000s 0m0.120000s" per line: the shell's, then its children's. */
function childCpuMs(timesOutput: string): number {
  const lines = timesOutput.trim().split('\n');
  const children = lines[lines.length - 1] ?? '';
  let ms = 0;
  for (const [, minutes, secs] of children.matchAll(/(\d+)m([\d.]+)s/g)) {
    ms += (Number(minutes) * 60 + Number(secs)) * 1000;
  }
  return ms;
}

/** Runs `command args…` in `cwd`, timing it and reading its CPU time from `times`. */
async function timed(command: string, args: string[], cwd?: string): Promise<Timed> {
  const started = performance.now();
  const child = spawn('sh', ['-c', '"$@" >/dev/null; s=$?; times >&2; exit $s', 'sh', command, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    ...(cwd ? { cwd } : {}),
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr += chunk;
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  const ms = performance.now() - started;
  if (code !== 0) throw new Error(`${command} exited with code ${code}: ${stderr.trim().slice(0, 500)}`);
  return { ms, cpu_ms: childCpuMs(stderr) };
}

async function filesIn(dir: string): Promise<{ names: string[]; bytes: number }> {
  const names = (await readdir(dir)).sort();
  let bytes = 0;
  for (const name of names) bytes += (await stat(join(dir, name))).size;
  return { names, bytes };
}

export async function curlParallel(
  config: string,
  dir: string,
  parallel: number,
): Promise<Timed & { bytes: number; files: number }> {
  const curl = await timed('curl', [
    '--parallel',
    '--parallel-max',
    String(parallel),
    // --silent alone still draws the parallel progress meter on curl 7.88.
    '--no-progress-meter',
    '--fail',
    '--config',
    config,
  ]);
  const { names, bytes } = await filesIn(dir);
  return { ...curl, bytes, files: names.length };
}

export interface SameWork extends Timed {
  bytes: number;
  files: number;
  /** Wall time of each tool. */
  curl_ms: number;
  sha256sum_ms: number;
  zip_ms: number;
  zip_bytes: number;
}

/**
 * curl to files, then sha256sum of every file, then `zip -0` (stored, as media.zip) of
 * them into `zipPath`; one after another, as a shell script would run them.
 */
export async function sameWorkPipeline(
  config: string,
  dir: string,
  parallel: number,
  zipPath: string,
): Promise<SameWork> {
  const curl = await curlParallel(config, dir, parallel);
  const { names } = await filesIn(dir);
  const hashed = await timed('sha256sum', ['--', ...names], dir);
  const zipped = await timed('zip', ['-0', '-q', '-X', zipPath, '--', ...names], dir);
  return {
    ms: curl.ms + hashed.ms + zipped.ms,
    cpu_ms: curl.cpu_ms + hashed.cpu_ms + zipped.cpu_ms,
    bytes: curl.bytes,
    files: curl.files,
    curl_ms: curl.ms,
    sha256sum_ms: hashed.ms,
    zip_ms: zipped.ms,
    zip_bytes: (await stat(zipPath)).size,
  };
}

/** What our media step measured (bench/media.ts), as the comparison needs it. */
export interface OursMedia {
  ms: number;
  cpu_ms: number;
  bytes: number;
}

const mbPerS = (bytes: number, ms: number) => bytes / 1e6 / (ms / 1000);
const cpuSPerGb = (cpuMs: number, bytes: number) => round(cpuMs / 1000 / (bytes / 1e9), 2);

/**
 * Both baselines on the URLs of `config` (curl alone first, then the pipeline into a
 * fresh directory), and our figures against them. A missing tool gives null, said in `skipped`.
 */
export async function mediaBaselines(
  ours: OursMedia,
  curlConfig: string,
  curlDir: string,
  parallel: number,
): Promise<Record<string, unknown>> {
  const oursMbps = mbPerS(ours.bytes, ours.ms);
  const figures: Record<string, unknown> = {
    ours_mb_per_s: round(oursMbps, 1),
    ours_cpu_s_per_gb: cpuSPerGb(ours.cpu_ms, ours.bytes),
  };
  if (!curlWithParallel()) {
    return { ...figures, media_vs_curl: null, media_vs_same_work: null, skipped: 'curl 7.66+ not found' };
  }
  const curl = await curlParallel(curlConfig, curlDir, parallel);
  const curlMbps = mbPerS(curl.bytes, curl.ms);
  Object.assign(figures, {
    media_vs_curl: round(oursMbps / curlMbps, 3),
    curl_s: round(curl.ms / 1000, 3),
    curl_mb_per_s: round(curlMbps, 1),
    curl_files: curl.files,
    curl_cpu_s_per_gb: cpuSPerGb(curl.cpu_ms, curl.bytes),
  });
  const missing = missingSameWorkTools();
  if (missing.length > 0) {
    return { ...figures, media_vs_same_work: null, skipped: `${missing.join(' and ')} not found` };
  }
  // The pipeline downloads again, into a fresh directory, so its curl writes new files too.
  await rm(curlDir, { recursive: true, force: true });
  await mkdir(curlDir, { recursive: true });
  const zipPath = join(curlDir, '..', 'same-work.zip');
  const same = await sameWorkPipeline(curlConfig, curlDir, parallel, zipPath);
  const sameMbps = mbPerS(same.bytes, same.ms);
  return {
    ...figures,
    media_vs_same_work: round(oursMbps / sameMbps, 3),
    same_work_s: round(same.ms / 1000, 3),
    same_work_mb_per_s: round(sameMbps, 1),
    same_work_steps_s: {
      curl: round(same.curl_ms / 1000, 3),
      sha256sum: round(same.sha256sum_ms / 1000, 3),
      zip: round(same.zip_ms / 1000, 3),
    },
    same_work_cpu_s_per_gb: cpuSPerGb(same.cpu_ms, same.bytes),
  };
}
