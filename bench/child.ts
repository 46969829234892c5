/**
 * One measured step in its own process: `node --import tsx bench/child.ts <step> <json input>`.
 * Prints one JSON line last: the step's result plus the process's peak RSS in MB.
 */

type Step = (input: never) => Promise<object>;

/**
 * Loaded on demand: a step's peak RSS must not include another step's libraries (DuckDB's
 * native library alone adds about 20 MB to a process that never uses it).
 */
const steps: Record<string, () => Promise<Step>> = {
  floor: async () => (await import('./floor.ts')).rawFetchFloor,
  export: async () => (await import('./export.ts')).exportOnce,
  replay: async () => (await import('./replay.ts')).replayStep,
  duckdb: async () => (await import('./duckdb.ts')).duckdbFlatten,
  'parquet-writers': async () => (await import('./parquet-writers.ts')).parquetWriters,
  media: async () => (await import('./media.ts')).mediaDownload,
  archive: async () => (await import('./archive-step.ts')).archiveStep,
  'privacy-handoff': async () => (await import('./privacy-step.ts')).privacyHandoffStep,
  statistics: async () => (await import('./statistics-step.ts')).statisticsStep,
  erase: async () => (await import('./erase-step.ts')).eraseStep,
  'copy-floor': async () => (await import('./copy-floor.ts')).copyFloorStep,
  'hash-floor': async () => (await import('./copy-floor.ts')).hashFloorStep,
};

async function main(): Promise<void> {
  const [step = '', input = '{}'] = process.argv.slice(2);
  const load = steps[step];
  if (!load) throw new Error(`unknown bench step "${step}" (known: ${Object.keys(steps).join(', ')})`);
  const run = await load();
  const result = await run(JSON.parse(input) as never);
  // maxRSS is in kilobytes.
  const rssMb = process.resourceUsage().maxRSS / 1024;
  process.stdout.write(`${JSON.stringify({ ...result, maxrss_mb: Math.round(rssMb * 10) / 10 })}\n`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
