/**
 * Start-up of the installed command: `node --import tsx bench/startup.ts [--rounds 15]`.
 * Packs the package (npm pack), installs it into a temporary prefix as a user would
 * (npm install --global), then times `study-export --version` through the installed command
 * (its sh line, node with the heap settings, dist/) against `node -e 0`, alternating the two
 * so both see the same machine load. The figure is the ratio of the medians. Writes
 * bench/results/<UTC time>-startup.json and latest-startup.json.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './processes.ts';
import { machine, option, round, writeResults } from './report.ts';

const exec = promisify(execFile);

/** Wall time of one process, start to exit, in milliseconds. */
function timed(file: string, args: string[], env: NodeJS.ProcessEnv): number {
  const start = process.hrtime.bigint();
  const result = spawnSync(file, args, { env, stdio: 'ignore' });
  if (result.status !== 0) throw new Error(`${file} ${args.join(' ')} exited with ${result.status}`);
  return Number(process.hrtime.bigint() - start) / 1e6;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

async function main(): Promise<void> {
  const rounds = option('rounds', 15);
  const work = await mkdtemp(join(tmpdir(), 'study-export-startup-'));
  try {
    process.stderr.write('packing and installing the package...\n');
    const { stdout } = await exec('npm', ['pack', '--pack-destination', work, '--json'], {
      cwd: repoRoot,
      maxBuffer: 1 << 24,
    });
    const tarball = join(work, (JSON.parse(stdout) as { filename: string }[])[0]!.filename);
    const prefix = join(work, 'prefix');
    await exec(
      'npm',
      ['install', '--global', '--omit=dev', '--no-audit', '--no-fund', '--prefix', prefix, tarball],
      {
        maxBuffer: 1 << 24,
      },
    );
    const command = join(prefix, 'bin', 'study-export');
    const env = { ...process.env, PATH: `${join(prefix, 'bin')}:${process.env.PATH ?? ''}` };
    // One of each first: the file system cache warm for both.
    timed(command, ['--version'], env);
    timed(process.execPath, ['-e', '0'], env);
    const loadBefore = loadavg()[0] ?? 0;
    const installed: number[] = [];
    const bare: number[] = [];
    for (let round = 0; round < rounds; round++) {
      installed.push(timed(command, ['--version'], env));
      bare.push(timed(process.execPath, ['-e', '0'], env));
    }
    const result = {
      machine: machine(),
      // The machine's load while measuring: the ratio holds only against a baseline under the same load.
      load_average_1m: { before: round(loadBefore, 1), after: round(loadavg()[0] ?? 0, 1) },
      rounds,
      installed_version_ms: round(median(installed), 1),
      node_e0_ms: round(median(bare), 1),
      startup_vs_node: round(median(installed) / median(bare), 2),
      installed_version_rounds_ms: installed.map((ms) => round(ms, 1)),
      node_e0_rounds_ms: bare.map((ms) => round(ms, 1)),
    };
    await writeResults(result, '-startup');
    process.stdout.write(
      `installed --version ${result.installed_version_ms} ms, node -e 0 ${result.node_e0_ms} ms: ratio ${result.startup_vs_node}\n`,
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

await main();
