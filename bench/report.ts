/** The machine a run came from, and the results files. */
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './processes.ts';

/** A number given on the command line as `--name N`, or `fallback`. */
export function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
}

export function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** The middle item by `value` (the upper middle of an even count); undefined when there are none. */
export function medianBy<T>(items: readonly T[], value: (item: T) => number): T | undefined {
  return [...items].sort((a, b) => value(a) - value(b))[Math.floor(items.length / 2)];
}

export function machine() {
  return {
    nproc: availableParallelism(),
    cpu: cpus()[0]?.model ?? 'unknown',
    memory_gb: round(totalmem() / 2 ** 30, 1),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    date: new Date().toISOString(),
  };
}

/**
 * bench/results/<UTC time><suffix>.json and latest<suffix>.json: the full bench with no suffix,
 * --quick with "-quick", the start-up, many-studies, archive, erase and statistics benches with
 * "-startup", "-studies", "-archive", "-erase" and "-statistics".
 */
export async function writeResults(
  result: object,
  suffix: '' | '-quick' | '-startup' | '-studies' | '-archive' | '-erase' | '-statistics' | '-privacy',
): Promise<string[]> {
  const dir = join(repoRoot, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  const stamp = new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  const text = `${JSON.stringify(result, null, 2)}\n`;
  const files = [join(dir, `${stamp}${suffix}.json`), join(dir, `latest${suffix}.json`)];
  for (const file of files) await writeFile(file, text);
  return files;
}

/** writeResults, then the files named on stderr (through `log`) and the result as one JSON line on stdout. */
export async function publishResults(
  result: object,
  suffix: Parameters<typeof writeResults>[1],
  log: (message: string) => void,
): Promise<void> {
  const files = await writeResults(result, suffix);
  log(`wrote ${files.join(', ')}`);
  process.stdout.write(`${JSON.stringify(result)}
`);
}
