/**
 * A service whose clock is 60 minutes behind this machine's (its Date header says so, and it
 * stamps created_at and updated_at on that clock): a response created after a run is still
 * exported by the next one, with a warning naming the skew; through the command line, with
 * verify and DuckDB over the run and over current/ finding every response once.
 */
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { verifyRun } from '../../src/load/verify.ts';
import { WATERMARK_LAG_MS } from '../../src/pipeline/watermark.ts';
import { readPipelineState } from '../../src/publish/state.ts';
import { startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { duckdb } from '../helpers/readers.ts';
import { readManifest } from '../helpers/run.ts';
import { cliPipeline } from '../helpers/run-files.ts';

const HOUR = 60 * 60 * 1000;

it('a service clock an hour behind: the response created after a run is exported by the next one, with a warning', async () => {
  const sandbox = await startSandbox({ seed: 111, studies: 1, responses: 3, startTime: Date.now() - HOUR });
  try {
    await withTempDir(async (dir) => {
      const { out, run } = await cliPipeline(sandbox, dir, 'clock');
      const [study] = sandbox.studies();
      const link = study!.link_id;

      const startedAt = Date.now();
      const first = await run();
      expect(first.code, first.stderr).toBe(0);
      expect(first.stderr).toMatch(
        /the service's clock is 60 minutes behind this machine's \(its Date header\)/,
      );
      const warnings = (await readManifest(first.runDir)).warnings.filter(
        (w) => w.code === 'service_clock_skew',
      );
      expect(warnings).toHaveLength(1);
      // The watermark is on the service's clock: an hour and the margin before this run began.
      const watermark = Date.parse(
        (await readPipelineState(join(out, 'clock'))).studies[study!.id]!.watermark!,
      );
      expect(watermark).toBeLessThanOrEqual(startedAt - HOUR - WATERMARK_LAG_MS + 5_000);
      expect(watermark).toBeGreaterThan(startedAt - HOUR - WATERMARK_LAG_MS - 60_000);

      // After the run, the service takes a response: stamped on its clock, an hour behind.
      const added = sandbox.addResponse(link);
      const second = await run();
      expect(second.code, second.stderr).toBe(0);
      const exported = await duckdb((query) =>
        query(`select response_id from read_parquet('${join(second.runDir, 'responses.parquet')}')`),
      );
      expect(exported.map((row) => row.response_id)).toContain(added);
      expect((await verifyRun(second.runDir)).problems).toEqual([]);

      const current = await duckdb((query) =>
        query(
          `select response_id, count(*)::int as n from read_parquet('${join(out, 'clock', 'current', 'responses', '*', '*.parquet')}', hive_partitioning = true) group by 1 order by 1`,
        ),
      );
      const all = sandbox
        .responses(link)
        .map((r) => r.id)
        .sort();
      expect(all).toHaveLength(4);
      expect(current).toEqual(all.map((id) => ({ response_id: id, n: 1 })));
    });
  } finally {
    await sandbox.close();
  }
});
