/** Transform and load alone: a run's raw/*.jsonl.gz to every table in CSV and Parquet. */
import { replayRaw } from '../src/pipeline/replay.ts';

export interface ReplayInput {
  rawDir: string;
  outDir: string;
  /** Rows per Parquet row group; default: the load stage's. */
  rowGroupSize?: number;
}

export async function replayStep(
  input: ReplayInput,
): Promise<{ ms: number; tables: Record<string, number> }> {
  const started = performance.now();
  const result = await replayRaw(input.rawDir, input.outDir, {
    formats: ['csv', 'parquet'],
    csv: { bom: false, escape_formulae: true },
    ...(input.rowGroupSize === undefined ? {} : { rowGroupSize: input.rowGroupSize }),
  });
  return {
    ms: performance.now() - started,
    tables: Object.fromEntries(result.tables.map((t) => [t.table, t.rows])),
  };
}
