/**
 * One measured step in its own process: `node --import tsx bench/child.ts <step> <json input>`.
 * Prints one JSON line last: the step's result plus the process's peak RSS in MB.
 */

import { duckdbFlatten } from './duckdb.ts';
import { exportOnce } from './export.ts';
import { rawFetchFloor } from './floor.ts';
import { mediaDownload } from './media.ts';
import { parquetWriters } from './parquet-writers.ts';
import { replayStep } from './replay.ts';

const steps: Record<string, (input: never) => Promise<object>> = {
  floor: rawFetchFloor,
  export: exportOnce,
  replay: replayStep,
  duckdb: duckdbFlatten,
  'parquet-writers': parquetWriters,
  media: mediaDownload,
};

async function main(): Promise<void> {
  const [step = '', input = '{}'] = process.argv.slice(2);
  const run = steps[step];
  if (!run) throw new Error(`unknown bench step "${step}" (known: ${Object.keys(steps).join(', ')})`);
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
