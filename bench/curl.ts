/** The media baseline: `curl --parallel --parallel-max N` fetching the same signed URLs to disk. */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** curl's version when it is installed and has --parallel (7.66+), else null. */
export function curlWithParallel(): string | null {
  const probe = spawnSync('curl', ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) return null;
  const version = /^curl (\d+)\.(\d+)\.(\d+)/.exec(probe.stdout);
  if (!version) return null;
  const [major, minor] = [Number(version[1]), Number(version[2])];
  return major > 7 || (major === 7 && minor >= 66) ? `${version[1]}.${version[2]}.${version[3]}` : null;
}

export async function curlParallel(
  config: string,
  dir: string,
  parallel: number,
): Promise<{ ms: number; bytes: number; files: number }> {
  const started = performance.now();
  const child = spawn(
    'curl',
    [
      '--parallel',
      '--parallel-max',
      String(parallel),
      // --silent alone still draws the parallel progress meter on curl 7.88.
      '--no-progress-meter',
      '--fail',
      '--config',
      config,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let errors = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    errors += chunk;
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  const ms = performance.now() - started;
  if (code !== 0) throw new Error(`curl exited with code ${code}: ${errors.trim().slice(0, 500)}`);
  let bytes = 0;
  const names = await readdir(dir);
  for (const name of names) bytes += (await stat(join(dir, name))).size;
  return { ms, bytes, files: names.length };
}
