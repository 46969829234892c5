/**
 * Reconcile against the sandbox over HTTP: a response the service deletes leaves current/ in
 * every format (read back by DuckDB, hyparquet, papaparse and SheetJS), and is recorded in the
 * run's deletions table and manifest; incremental.reconcile_every makes a scheduled run
 * reconcile when due and not before; the fraction guard; a study no longer listed is kept.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import XLSX from 'xlsx';
import { verifyRun } from '../../src/load/verify.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { currentTables, freshExport } from '../helpers/current.ts';
import { withTempDir } from '../helpers/environment.ts';
import { duckdb, readCsv, readHyparquet } from '../helpers/readers.ts';
import { readManifest, runAgainst, sandboxConfig } from '../helpers/run.ts';
import { sandboxResponseIds } from '../helpers/run-files.ts';

let sandbox: Sandbox;
beforeEach(async () => {
  sandbox = await startSandbox({ seed: 11, studies: 3, responses: 12 });
});
afterEach(async () => {
  await sandbox.close();
});

const currentOf = (out: string) => join(out, 'test', 'current');

/** Every file under current/ (its relative path) whose bytes, unzipped where a workbook, hold `text`. */
async function filesHolding(current: string, text: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(current, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const relative = path.slice(current.length + 1);
    if (entry.name.endsWith('.xlsx')) {
      const book = XLSX.read(await readFile(path));
      const cells = book.SheetNames.map((name) => XLSX.utils.sheet_to_csv(book.Sheets[name]!)).join('\n');
      if (cells.includes(text)) found.push(relative);
    } else if (entry.name.endsWith('.parquet')) {
      const rows = JSON.stringify(await readHyparquet(path), (_key, value) =>
        typeof value === 'bigint' ? Number(value) : value,
      );
      if (rows.includes(text)) found.push(relative);
    } else if ((await readFile(path, 'utf8')).includes(text)) found.push(relative);
  }
  return found;
}

async function setReconciledAt(out: string, studyId: string, at: Date): Promise<void> {
  const path = join(out, 'test', 'state', `${studyId}.json`);
  const entry = JSON.parse(await readFile(path, 'utf8'));
  await writeFile(path, JSON.stringify({ ...entry, reconciled_at: at.toISOString() }));
}

async function reconciledAt(out: string, studyId: string): Promise<string | undefined> {
  return JSON.parse(await readFile(join(out, 'test', 'state', `${studyId}.json`), 'utf8')).reconciled_at;
}

describe('run --reconcile', () => {
  it('takes a response the service deleted out of every file of current/, and records it', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { output: { formats: ['csv', 'parquet', 'xlsx'] } });
      await runAgainst(sandbox, config);
      const [study] = sandbox.studies();
      const gone = sandbox.responses(study!.link_id)[3]!.id;
      expect(await filesHolding(currentOf(out), gone)).not.toEqual([]);
      sandbox.deleteResponse(study!.link_id, gone);

      const result = await runAgainst(sandbox, config, { reconcile: true });
      expect(result.status).toBe('complete');
      const runDir = result.runDir!;

      expect(await filesHolding(currentOf(out), gone)).toEqual([]);
      // The rest is what a fresh export of the service as it is now holds, value by value.
      expect(await currentTables(currentOf(out))).toEqual(await freshExport(sandbox));
      const ids = await duckdb((query) =>
        query(
          `select response_id from read_csv('${currentOf(out)}/responses/*/*.csv', hive_partitioning = true)`,
        ),
      );
      expect(ids.map((row) => row.response_id)).not.toContain(gone);
      expect(ids).toHaveLength(sandboxResponseIds(sandbox).length);

      const expected = { response_id: gone, study_id: study!.id, run_id: runDir.split('/').pop() };
      const parquet = await readHyparquet(join(runDir, 'deletions.parquet'));
      expect(parquet).toHaveLength(1);
      expect(parquet[0]).toMatchObject(expected);
      const csv = (await readCsv(join(runDir, 'deletions.csv'))).records;
      expect(csv[0]).toEqual(['response_id', 'study_id', 'detected_at', 'run_id']);
      expect(csv.slice(1)).toEqual([[gone, study!.id, expect.stringMatching(/Z$/), expected.run_id]]);
      const manifest = await readManifest(runDir);
      expect(manifest.tables.deletions).toBe(1);
      expect(manifest.reconcile?.studies.find((s) => s.study_id === study!.id)).toEqual({
        study_id: study!.id,
        link_id: study!.link_id,
        held: 12,
        listed: 11,
        missing: 1,
        removed: 1,
        outcome: 'removed',
      });
      expect(manifest.reconcile?.studies.filter((s) => s.outcome === 'none')).toHaveLength(
        sandbox.studies().length - 1,
      );
      expect((await verifyRun(runDir)).problems).toEqual([]);
    });
  });

  it('incremental.reconcile_every: a scheduled run reconciles when due and not before', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { incremental: { reconcile_every: '1h' } });
      const first = await runAgainst(sandbox, config);
      const [study, other] = sandbox.studies();
      const stamped = await reconciledAt(out, study!.id);
      // A full export reconciles the study: it holds what the service listed.
      expect(stamped).toBe(
        JSON.parse(await readFile(join(first.runDir!, 'manifest.json'), 'utf8')).started_at,
      );
      const gone = sandbox.responses(study!.link_id)[0]!.id;
      sandbox.deleteResponse(study!.link_id, gone);

      // Not due: nothing new, no run, and the deleted response is still in current/.
      const early = await runAgainst(sandbox, config);
      expect(early.status).toBe('unchanged');
      expect(await filesHolding(currentOf(out), gone)).not.toEqual([]);

      // Due for one study only: that one is reconciled, the other is not listed whole.
      const before = sandbox.requests.length;
      await setReconciledAt(out, study!.id, new Date(Date.now() - 2 * 3_600_000));
      const due = await runAgainst(sandbox, config);
      expect(due.status).toBe('complete');
      expect(await filesHolding(currentOf(out), gone)).toEqual([]);
      const manifest = await readManifest(due.runDir!);
      expect(manifest.reconcile?.studies.map((s) => s.study_id)).toEqual([study!.id]);
      expect(await reconciledAt(out, study!.id)).toBe(manifest.started_at);
      const wholeListings = sandbox.requests
        .slice(before)
        .filter(
          (r) => r.listener === 'api' && r.path.includes('/responses/') && !r.path.includes('updated_since'),
        );
      expect(wholeListings.some((r) => r.path.includes(encodeURIComponent(other!.link_id)))).toBe(false);

      // Reconciled and nothing else new: a reconcile that finds nothing writes no run, and
      // records its time all the same (only reconciled_at moves), so the next is due later.
      const stateBefore = JSON.parse(await readFile(join(out, 'test', 'state', `${other!.id}.json`), 'utf8'));
      await setReconciledAt(out, other!.id, new Date(Date.now() - 2 * 3_600_000));
      const listedAt = Date.now();
      const again = await runAgainst(sandbox, config);
      expect(again.status).toBe('unchanged');
      expect(await readdir(join(out, 'test', 'runs'))).toHaveLength(2);
      const stateAfter = JSON.parse(await readFile(join(out, 'test', 'state', `${other!.id}.json`), 'utf8'));
      expect(Date.parse(stateAfter.reconciled_at)).toBeGreaterThanOrEqual(listedAt - 1000);
      expect(Date.parse(stateAfter.reconciled_at)).toBeLessThanOrEqual(Date.now());
      const { reconciled_at: _after, ...restAfter } = stateAfter;
      const { reconciled_at: _before, ...restBefore } = stateBefore;
      expect(restAfter).toEqual(restBefore);
      // Not due any more: the next scheduled run lists no study whole.
      const quiet = sandbox.requests.length;
      expect((await runAgainst(sandbox, config)).status).toBe('unchanged');
      const listedWhole = sandbox.requests
        .slice(quiet)
        .filter(
          (r) => r.listener === 'api' && r.path.includes('/responses/') && !r.path.includes('updated_since'),
        );
      expect(listedWhole).toEqual([]);
    });
  });

  it('holds back a listing that came back empty (exit 3, nothing removed); --accept-deletions lets it through', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out);
      await runAgainst(sandbox, config);
      const [study] = sandbox.studies();
      const before = await currentTables(currentOf(out));
      // The reconcile lists before anything else asks for the study's pages; a listing short of
      // the count its desc declares is paged again, and empty twice it is the service's answer.
      const empty = () =>
        sandbox.overrideNext(
          { listener: 'api', pathIncludes: `/responses/${encodeURIComponent(study!.link_id)}?` },
          { status: 200, contentType: 'application/json', body: '[]' },
          2,
        );

      empty();
      const held = await runAgainst(sandbox, config, { reconcile: true });
      expect(held.status).toBe('partial');
      expect(await currentTables(currentOf(out))).toEqual(before);
      const manifest = await readManifest(held.runDir!);
      expect(manifest.tables.deletions).toBe(0);
      const warning = manifest.warnings.find((w) => w.code === 'deletions_held_back');
      expect(warning?.study_id).toBe(study!.id);
      expect(warning?.message).toContain(study!.link_id);
      expect(warning?.message).toContain('lists 0 responses and no longer lists 12 of the 12');
      expect(warning?.message).toContain('--accept-deletions');
      expect(manifest.reconcile?.studies.find((s) => s.study_id === study!.id)?.outcome).toBe('held_back');

      empty();
      const accepted = await runAgainst(sandbox, config, { acceptDeletions: true });
      expect(accepted.status).toBe('complete');
      const after = await currentTables(currentOf(out));
      expect(after.responses.filter((row) => row.includes(study!.id))).toEqual([]);
      expect(after.responses).toHaveLength(before.responses.length - 12);
      expect(await readHyparquet(join(accepted.runDir!, 'deletions.parquet'))).toHaveLength(12);
    });
  });

  it('reports a study the service no longer lists, and keeps its responses', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out);
      await runAgainst(sandbox, config);
      const [, study] = sandbox.studies();
      const before = await currentTables(currentOf(out));
      sandbox.deleteStudy(study!.id);

      const result = await runAgainst(sandbox, config, { reconcile: true });
      expect(result.status).toBe('complete');
      const manifest = await readManifest(result.runDir!);
      expect(manifest.reconcile?.unlisted).toEqual([{ study_id: study!.id, link_id: study!.link_id }]);
      const warning = manifest.warnings.find((w) => w.code === 'study_not_listed');
      expect(warning?.message).toContain(study!.link_id);
      expect(manifest.tables.deletions).toBe(0);
      expect(await currentTables(currentOf(out))).toEqual(before);
    });
  });
});
