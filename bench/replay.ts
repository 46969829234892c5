/** Transform and load alone: `study-export replay` of a run's raw/ to every table in CSV and Parquet. */
import { silentReporter } from '../src/pipeline/progress.ts';
import { replayRun } from '../src/replay/index.ts';

export interface ReplayInput {
  runDir: string;
  outDir: string;
}

export async function replayStep(
  input: ReplayInput,
): Promise<{ ms: number; tables: Record<string, number>; runDir: string }> {
  const started = performance.now();
  const result = await replayRun({
    runDir: input.runDir,
    out: input.outDir,
    formats: ['csv', 'parquet'],
    reporter: silentReporter,
    env: {},
  });
  return {
    ms: performance.now() - started,
    tables: Object.fromEntries(result.tables.map((t) => [t.table, t.rows])),
    runDir: result.runDir as string,
  };
}
