/**
 * A run of many small studies: current/ is listed once for the run, and a study that found
 * nothing is prepared only once the run is sure to be committed. After a first run, a rerun
 * with nothing new and an incremental run where one late study changed, DuckDB over current/
 * reads exactly what a fresh full export of the service holds, row for row.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUCKETS } from '../../src/buckets.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { type TableName, tableNames } from '../../src/tables/index.ts';
import { currentTables, freshExport, partitions } from '../helpers/current.ts';
import { withTempDir } from '../helpers/environment.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 47, studies: 121, responses: 2 });
});
afterAll(async () => {
  await sandbox?.close();
});

describe('current/ of a run of over a hundred small studies', () => {
  it('equals a fresh full export after a first run, a rerun with nothing new and an incremental run', async () => {
    await withTempDir(async (out) => {
      const current = join(out, 'test', 'current');
      const config = sandboxConfig(sandbox, out, { output: { formats: ['csv', 'parquet'] } });
      const first = await runAgainst(sandbox, config);
      expect(first.status).toBe('complete');
      const studies = sandbox.studies();
      const expected = await freshExport(sandbox);
      const exported = expected.studies.map((row) => JSON.parse(row).study_id as string);
      expect(exported.length).toBeGreaterThanOrEqual(120);
      expect(expected.responses.length).toBeGreaterThanOrEqual(240);
      expect(await currentTables(current)).toEqual(expected);

      const unchanged = await runAgainst(sandbox, config);
      expect(unchanged.status).toBe('unchanged');
      expect(unchanged.runDir).toBeNull();
      expect(await currentTables(current)).toEqual(expected);

      // A study late in the list changes: the studies before it waited, and are prepared then.
      const late = studies.filter((study) => exported.includes(study.id)).at(-1)!;
      const added = sandbox.addResponse(late.link_id);
      const third = await runAgainst(sandbox, config);
      expect(third.status).toBe('complete');
      const now = await currentTables(current);
      expect(now).toEqual(await freshExport(sandbox));
      expect(now.responses.filter((row) => JSON.parse(row).response_id === added)).toHaveLength(1);
      // Every partition whole: one part per format; the studies share at most 64 buckets, and
      // each has one file of its own in current/, its wide sheet.
      for (const table of tableNames) {
        const folders = Object.entries(await partitions(current, table));
        expect(folders.length).toBeLessThanOrEqual(BUCKETS);
        for (const [partition, files] of folders) {
          expect(partition).toMatch(/^bucket=\d\d$/);
          expect(files, `${table}/${partition}`).toEqual([
            expect.stringMatching(/\.csv$/),
            expect.stringMatching(/\.parquet$/),
          ]);
        }
      }
      const sheets = Object.entries(await partitions(current, 'wide' as TableName));
      expect(sheets.map(([folder]) => folder).sort()).toEqual(exported.map((id) => `study_id=${id}`).sort());
      for (const [, files] of sheets) expect(files).toHaveLength(1);
    });
  }, 600_000);
});
