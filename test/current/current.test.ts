/**
 * The current dataset across incremental runs: after any number of runs, DuckDB over
 * current/ reads every response exactly once, in its newest copy, equal row for row to a
 * fresh full export of the service as it is now.
 */

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/buckets.ts';
import { partitionName } from '../../src/current/index.ts';
import { resourceName } from '../../src/output/datapackage.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { columnNames, tableNames, tables } from '../../src/tables/index.ts';
import { currentTables, freshExport, partitions } from '../helpers/current.ts';
import { withTempDir } from '../helpers/environment.ts';
import { validateDataPackage } from '../helpers/frictionless.ts';
import { duckdb, readCsv } from '../helpers/readers.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';

let sandbox: Sandbox;
beforeEach(async () => {
  sandbox = await startSandbox({ seed: 31, studies: 4, responses: 5 });
});
afterEach(async () => {
  await sandbox.close();
});

const currentOf = (out: string) => join(out, 'test', 'current');

/** Each study's wide sheet: header, then the records sorted (row order is not part of the contract). */
async function wideSheets(
  folder: (studyId: string, linkId: string) => string,
): Promise<Record<string, string[][]>> {
  const sheets: Record<string, string[][]> = {};
  for (const study of sandbox.studies()) {
    const { records } = await readCsv(folder(study.id, study.link_id));
    const [header, ...rows] = records;
    sheets[study.id] = [header!, ...rows.sort((a, b) => (a[0]! < b[0]! ? -1 : 1))];
  }
  return sheets;
}

/** The response changes in content and in time: other answers, no URL parameters, a shorter transcript. */
function rewriteResponse(linkId: string, responseId: string): void {
  sandbox.mutateListItem(linkId, responseId, (item) => ({
    ...item,
    attributes: {},
    answers_array: (item.answers_array as Array<Record<string, unknown>>).map((a) => ({
      ...a,
      answer: `CHANGED ${String(a.answer)}`,
    })),
  }));
  sandbox.mutateDetail(linkId, responseId, (detail) => ({
    ...detail,
    transcript: (detail.transcript as unknown[]).slice(0, 1),
  }));
  sandbox.touchResponse(linkId, responseId, new Date(Date.now() + 60_000));
}

describe('the current dataset', () => {
  it('holds the newest copy of every row exactly once after incremental runs, like a fresh full export', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { output: { formats: ['csv', 'parquet'] } });
      const first = await runAgainst(sandbox, config);
      expect(first.status).toBe('complete');
      expect(await currentTables(currentOf(out))).toEqual(await freshExport(sandbox));

      const [changed, untouched] = sandbox.studies();
      const target = sandbox.responses(changed!.link_id)[1]!.id;
      rewriteResponse(changed!.link_id, target);
      const added = sandbox.addResponse(changed!.link_id);
      const untouchedBefore = await partitions(currentOf(out), 'answers');
      const second = await runAgainst(sandbox, config);
      expect(second.tables.find((t) => t.table === 'responses')?.rows).toBe(2);

      const current = await currentTables(currentOf(out));
      expect(current).toEqual(await freshExport(sandbox));
      // Wide sheets: the same cells as a fresh export's, the changed response's new answers in them.
      const currentWide = await wideSheets((id, linkId) =>
        join(currentOf(out), 'wide', `study_id=${id}`, `${linkId}.csv`),
      );
      const freshWide = await withTempDir(async (fresh) => {
        const result = await runAgainst(sandbox, sandboxConfig(sandbox, fresh));
        return wideSheets((_id, linkId) => join(result.runDir!, 'wide', `${linkId}.csv`));
      });
      expect(currentWide).toEqual(freshWide);
      const targetRow = currentWide[changed!.id]!.find((record) => record[0] === target)!;
      expect(targetRow.filter((cell) => cell.startsWith('CHANGED ')).length).toBeGreaterThan(0);
      const answers = current.answers.map((row) => JSON.parse(row) as Record<string, string>);
      const ofTarget = answers.filter((row) => row.response_id === target);
      expect(ofTarget.length).toBeGreaterThan(0);
      for (const row of ofTarget) expect(row.answer).toMatch(/^CHANGED /);
      expect(current.attributes.filter((row) => row.includes(target))).toEqual([]);
      expect(current.transcript.filter((row) => JSON.parse(row).response_id === target)).toHaveLength(1);
      expect(current.responses.filter((row) => JSON.parse(row).response_id === added)).toHaveLength(1);
      const ids = current.responses.map((row) => JSON.parse(row).response_id as string);
      expect(new Set(ids).size).toBe(ids.length);

      // One part per table in every partition; the study the run found unchanged keeps its part.
      const runId = (dir: string) => dir.split(/[/\\]/).at(-1);
      for (const table of tableNames) {
        for (const [partition, files] of Object.entries(await partitions(currentOf(out), table))) {
          expect(
            files.filter((f) => f.endsWith('.parquet')),
            `${table}/${partition}`,
          ).toHaveLength(1);
          expect(
            files.filter((f) => f.endsWith('.csv')),
            `${table}/${partition}`,
          ).toHaveLength(1);
        }
      }
      const answersNow = await partitions(currentOf(out), 'answers');
      const [untouchedBucket, changedBucket] = [untouched!, changed!].map((s) =>
        partitionName(bucketOf(s.id)),
      );
      expect(untouchedBucket).not.toBe(changedBucket);
      expect(answersNow[untouchedBucket!]).toEqual(untouchedBefore[untouchedBucket!]);
      expect(answersNow[untouchedBucket!]).toEqual([
        `part-${runId(first.runDir!)}.csv`,
        `part-${runId(first.runDir!)}.parquet`,
      ]);
      expect(answersNow[changedBucket!]).toEqual([
        `part-${runId(second.runDir!)}.csv`,
        `part-${runId(second.runDir!)}.parquet`,
      ]);

      // The CSV twin holds the same rows.
      await duckdb(async (query) => {
        const [csv] = await query(
          `select count(*)::int n from read_csv('${currentOf(out)}/answers/*/*.csv', hive_partitioning = true)`,
        );
        expect(csv?.n).toBe(current.answers.length);
      });
    });
  });

  it("gives a study new to it the run's own rows, in their order, as Parquet and as CSV", async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, {
        output: { formats: ['csv', 'parquet'], csv: { bom: true } },
      });
      const run = (await runAgainst(sandbox, config)).runDir!;
      await duckdb(async (query) => {
        for (const table of ['responses', 'answers', 'transcript', 'attributes'] as const) {
          for (const study of sandbox.studies()) {
            const part = join(
              currentOf(out),
              table,
              partitionName(bucketOf(study.id)),
              `part-${run.split(/[/\\]/).at(-1)}`,
            );
            const columns = tables[table].columns.map((column) => `"${column.name}"`).join(', ');
            // File order, no sorting: the part holds the run's rows of the study as written.
            const inRun = await query(
              `select ${columns} from read_parquet('${join(run, `${table}.parquet`)}') where study_id = '${study.id}'`,
            );
            expect(inRun.length, `${table} of ${study.link_id}`).toBeGreaterThan(0);
            expect(
              await query(
                `select ${columns} from read_parquet('${part}.parquet') where study_id = '${study.id}'`,
              ),
            ).toEqual(inRun);
            // The CSV part: the table's header, with no byte order mark whatever csv.bom says (a
            // table CSV, for programs), then the same records.
            const runCsv = (await readCsv(join(run, `${table}.csv`))).records;
            const studyColumn = (runCsv[0] as string[]).indexOf('study_id');
            const partCsv = await readCsv(`${part}.csv`);
            expect(partCsv.text.startsWith('\ufeff')).toBe(false);
            expect(partCsv.records[0]).toEqual(runCsv[0]);
            expect(partCsv.records.slice(1).filter((record) => record[studyColumn] === study.id)).toEqual(
              runCsv.slice(1).filter((record) => record[studyColumn] === study.id),
            );
          }
        }
      });
      // Its current wide sheet is the run's, byte for byte.
      for (const study of sandbox.studies()) {
        const sheet = `${study.link_id}.csv`;
        const current = await readFile(join(currentOf(out), 'wide', `study_id=${study.id}`, sheet), 'utf8');
        expect(current.startsWith('\ufeff')).toBe(true);
        expect(current).toBe(await readFile(join(run, 'wide', sheet), 'utf8'));
      }
    });
  });

  it('keeps deleted responses after an incremental run and drops them after a full run', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { output: { formats: ['parquet'] } });
      await runAgainst(sandbox, config);
      const [study] = sandbox.studies();
      const gone = sandbox.responses(study!.link_id)[0]!.id;
      sandbox.deleteResponse(study!.link_id, gone);
      await runAgainst(sandbox, config);
      const after = await currentTables(currentOf(out));
      expect(after.responses.filter((row) => row.includes(gone))).toHaveLength(1);
      await runAgainst(sandbox, config, { full: true });
      const current = await currentTables(currentOf(out));
      for (const table of tableNames) expect(current[table].filter((row) => row.includes(gone))).toEqual([]);
      expect(current).toEqual(await freshExport(sandbox));
    });
  });

  it('describes itself in current/datapackage.json: every part by path, readable by the datapackage library', async () => {
    await withTempDir(async (out) => {
      // csv.bom is for the wide sheets: no part, copied (first run) or merged (second), has one,
      // or the reader would name '\ufeffresponse_id' as a column the schema does not have.
      const config = sandboxConfig(sandbox, out, {
        output: { formats: ['csv', 'parquet'], csv: { bom: true } },
      });
      const first = (await runAgainst(sandbox, config)).runDir!;
      const current = currentOf(out);
      const path = join(current, 'datapackage.json');
      const check = async () => {
        const report = await validateDataPackage(current);
        expect(report.errors).toEqual([]);
        const described = JSON.parse(await readFile(path, 'utf8'));
        for (const table of tableNames) {
          const parts = await partitions(current, table);
          for (const format of ['parquet', 'csv'] as const) {
            const resource = described.resources.find(
              (r: { name: string }) => r.name === resourceName(table, format),
            );
            // An explicit list of every part, one per bucket, as the folders hold them now.
            const listed = Object.entries(parts).flatMap(([partition, names]) =>
              names
                .filter((name) => name.endsWith(`.${format}`))
                .map((name) => `${table}/${partition}/${name}`),
            );
            expect(resource.path).toEqual(listed.sort());
            // Every part holds study_id: a bucket's folder names no study.
            expect(resource.schema.fields.map((f: { name: string }) => f.name)).toEqual(columnNames(table));
          }
          // Every CSV part read and cast by the reference reader: as many rows as DuckDB reads.
          expect(report.read[table]).toBe((await currentTables(current))[table].length);
        }
        return described;
      };
      const before = await check();
      const run = JSON.parse(await readFile(join(first, 'datapackage.json'), 'utf8'));
      const tableResources = (pkg: { resources: { name: string; table?: string }[] }) =>
        pkg.resources
          .filter((r) => r.table)
          .map((r) => r.name)
          .sort();
      // The same names as a run's descriptor, but for what a run records of itself (deletions).
      const ofData = (name: string) =>
        tableNames.some((table) => name === table || name === `${table}-parquet`);
      expect(tableResources(before)).toEqual(tableResources(run).filter(ofData));
      expect(tableResources(run).filter((name) => !ofData(name))).toEqual(['deletions', 'deletions-parquet']);
      expect(before.sources).toEqual([{ title: expect.any(String), path: sandbox.base_url }]);
      expect(before.profile).toBe('data-package');

      // A run that changes a study: the descriptor names its new parts.
      const [study] = sandbox.studies();
      sandbox.touchResponse(study!.link_id, sandbox.responses(study!.link_id)[0]!.id);
      await runAgainst(sandbox, config);
      const after = await check();
      expect(JSON.stringify(after.resources)).not.toEqual(JSON.stringify(before.resources));
    });
  });
});
