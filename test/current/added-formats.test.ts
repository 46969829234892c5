/**
 * A format added to a pipeline after current/ was written is filled in from current/'s own
 * Parquet parts, by a run with nothing new (no request beyond its look at the service) and by
 * a run that exports something: the files are those an output with the format from the start
 * holds (CSV parts record for record; workbooks cell for cell, read by SheetJS).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import XLSX from 'xlsx';
import { bucketOf } from '../../src/buckets.ts';
import { partitionName, workbookFolder } from '../../src/current/index.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { tableNames } from '../../src/tables/index.ts';
import { csvParts, partitions } from '../helpers/current.ts';
import { withTempDir } from '../helpers/environment.ts';
import { detailRequests, runAgainst, sandboxConfig } from '../helpers/run.ts';
import { workbookXmlProblems } from '../helpers/workbook.ts';

let sandbox: Sandbox;
beforeEach(async () => {
  sandbox = await startSandbox({ seed: 52, studies: 4, responses: 5 });
});
afterEach(async () => {
  await sandbox.close();
});

/**
 * A study's current workbook: its sheets but About (which dates the export), as a header and
 * rows sorted (answers and transcript follow the order of their parts' rows).
 */
async function workbookRows(root: string, study: { id: string; link_id: string }) {
  const book = XLSX.read(await readFile(join(root, workbookFolder(study.id), `${study.link_id}.xlsx`)));
  expect(book.SheetNames).toEqual(['About', 'wide', 'answers', 'transcript']);
  return Object.fromEntries(
    ['wide', 'answers', 'transcript'].map((sheet) => {
      const [header, ...rows] = XLSX.utils.sheet_to_json<unknown[]>(book.Sheets[sheet]!, {
        header: 1,
        raw: true,
      });
      return [sheet, [header, ...rows.map((row) => JSON.stringify(row)).sort()]];
    }),
  );
}

describe('a format added after current/ was written', () => {
  it('is filled in by a run with nothing new, without a request for it', async () => {
    await withTempDir(async (out) => {
      const parquetOnly = sandboxConfig(sandbox, join(out, 'a'), { output: { formats: ['parquet'] } });
      await runAgainst(sandbox, parquetOnly);
      const root = join(out, 'a', 'test');
      expect(await csvParts(join(root, 'current'))).toEqual({});

      const all = sandboxConfig(sandbox, join(out, 'a'), { output: { formats: ['csv', 'parquet', 'xlsx'] } });
      const from = sandbox.requests.length;
      const added = await runAgainst(sandbox, all);
      const studies = sandbox.studies();
      // The look a run with nothing new always takes (the study list, a page per study), nothing more.
      expect(sandbox.requests.slice(from)).toHaveLength(1 + studies.length);
      expect(detailRequests(sandbox, from)).toBe(0);
      expect(added.status).toBe('unchanged');
      expect(added.unchanged?.filled).toEqual({
        workbooks: studies.length,
        csvParts: Object.keys(await csvParts(join(root, 'current'))).length,
      });

      // What an output with every format from the start holds.
      const fromStart = sandboxConfig(sandbox, join(out, 'b'), {
        output: { formats: ['csv', 'parquet', 'xlsx'] },
      });
      await runAgainst(sandbox, fromStart);
      const reference = join(out, 'b', 'test');
      const filledParts = await csvParts(join(root, 'current'));
      expect(Object.keys(filledParts)).toHaveLength(
        tableNames.length * Object.keys(await partitions(join(root, 'current'), 'responses')).length,
      );
      expect(filledParts).toEqual(await csvParts(join(reference, 'current')));
      for (const study of studies) {
        expect(await workbookRows(root, study)).toEqual(await workbookRows(reference, study));
        const file = join(root, workbookFolder(study.id), `${study.link_id}.xlsx`);
        expect(await workbookXmlProblems(file, study)).toEqual([]);
      }
      // current/datapackage.json and README.md name them.
      const described = JSON.parse(await readFile(join(root, 'current', 'datapackage.json'), 'utf8'));
      const paths = described.resources.flatMap((r: { path: string | string[] }) => r.path);
      for (const study of studies)
        expect(paths).toContain(
          `${workbookFolder(study.id).replace(/^current\//, '')}/${study.link_id}.xlsx`,
        );
      expect(paths.filter((path: string) => path.endsWith('.csv') && path.includes('bucket='))).toHaveLength(
        Object.keys(filledParts).length,
      );
      expect(await readFile(join(root, 'current', 'README.md'), 'utf8')).toContain('xlsx/');

      // Once filled, nothing is missing: the next run with nothing new is only a look again.
      const again = await runAgainst(sandbox, all);
      expect(again.unchanged?.filled).toBeUndefined();
    });
  });

  it('is filled in by a run that exports something, for the studies and buckets it did not touch', async () => {
    await withTempDir(async (out) => {
      await runAgainst(sandbox, sandboxConfig(sandbox, out, { output: { formats: ['parquet'] } }));
      const [changed] = sandbox.studies();
      sandbox.touchResponse(changed!.link_id, sandbox.responses(changed!.link_id)[0]!.id);
      const all = sandboxConfig(sandbox, out, { output: { formats: ['csv', 'parquet', 'xlsx'] } });
      const from = sandbox.requests.length;
      const result = await runAgainst(sandbox, all, { studies: [changed!.id] });
      expect(result.status).toBe('complete');
      // The one response changed is the only detail asked for.
      expect(detailRequests(sandbox, from)).toBe(1);
      const current = join(out, 'test', 'current');
      // The run writes its study's bucket in every format where it rewrites a part (a part it
      // keeps is filled in like the other buckets'); every other bucket is filled in.
      const parts = Object.keys(await csvParts(current));
      const untouched = parts.filter((part) => !part.endsWith(`/${partitionName(bucketOf(changed!.id))}`));
      expect(result.filled?.workbooks).toBe(sandbox.studies().length - 1);
      expect(result.filled?.csvParts).toBeGreaterThanOrEqual(untouched.length);
      expect(result.filled?.csvParts).toBeLessThan(parts.length);
      for (const table of tableNames) {
        for (const names of Object.values(await partitions(current, table)))
          expect(names.map((name) => name.replace(/\.(csv|parquet)$/, '.*')).sort()).toEqual(
            [...new Set(names.map((name) => name.replace(/\.(csv|parquet)$/, '.*')))]
              .flatMap((n) => [n, n])
              .sort(),
          );
      }
      const root = join(out, 'test');
      expect(await readdir(join(current, 'xlsx'))).toHaveLength(sandbox.studies().length);
      for (const study of sandbox.studies()) {
        const { wide } = await workbookRows(root, study);
        // A header row and one row per response of the study.
        expect(wide).toHaveLength(1 + sandbox.responses(study.link_id).length);
      }
    });
  });
});
