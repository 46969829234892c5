/**
 * `study-export replay`: a run's raw/ rebuilt, without the service, through the same code as
 * `run`, gives a new run that verifies and holds the same tables, value by value.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { type TableName, tableNames, tables } from '../../src/tables/index.ts';
import { runCli } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readCsv, readHyparquet } from '../helpers/readers.ts';
import { readManifest, runAgainst, sandboxConfig } from '../helpers/run.ts';

/** A table's rows in primary-key order, so two runs compare whatever order they wrote in. */
async function parquetRows(runDir: string, table: TableName): Promise<Record<string, unknown>[]> {
  const key = (row: Record<string, unknown>) =>
    tables[table].primaryKey.map((column) => String(row[column])).join('\u0000');
  const rows = await readHyparquet(join(runDir, `${table}.parquet`));
  return rows.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

async function sortedCsv(path: string): Promise<string[]> {
  const [header, ...records] = (await readCsv(path)).records;
  return [JSON.stringify(header), ...records.map((record) => JSON.stringify(record)).sort()];
}

async function rejectReasons(runDir: string): Promise<string[]> {
  const text = await readFile(join(runDir, 'rejects.jsonl'), 'utf8');
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => (JSON.parse(line) as { reason: string }).reason)
    .sort();
}

describe('replay', () => {
  let sandbox: Sandbox;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 11, studies: 4, responses: 30, maxPerPage: 7 });
    const [study] = sandbox.studies();
    const items = sandbox.responses(study!.link_id);
    // Records the run rejects must be rejected by the replay in the same way.
    sandbox.mutateListItem(study!.link_id, items[0]!.id, (item) => ({ ...item, short_transcript: 42 }));
    sandbox.mutateDetail(study!.link_id, items[1]!.id, (detail) => ({ ...detail, transcript: 'nope' }));
  });
  afterAll(async () => {
    await sandbox.close();
  });

  it('rebuilds every table and wide sheet of a run from raw/ alone into a new run that verifies', async () => {
    await withTempDir(async (dir) => {
      const config = sandboxConfig(sandbox, join(dir, 'out'), { source: { per_page: 7 } });
      const run = await runAgainst(sandbox, config, { formats: ['csv', 'parquet'] });
      const runDir = run.runDir as string;
      expect(run.rejects).toBe(2);
      const requestsBefore = sandbox.requests.length;

      const replay = await runCli(['replay', runDir, '--out', join(dir, 'replayed')]);
      expect(replay.stderr).not.toContain('study-export:');
      expect(replay.code).toBe(3); // partial, like the run: the same two records are rejected
      expect(sandbox.requests.length).toBe(requestsBefore);
      const replayDir = /^run: (.+)$/m.exec(replay.stdout)?.[1] as string;
      expect(replayDir).toMatch(/replayed[/\\]test[/\\]runs[/\\]\d{8}T\d{6}Z$/);
      // The current dataset follows the service: a replay leaves it alone (here: none at all).
      expect(await readdir(join(dir, 'replayed', 'test'))).not.toContain('current');
      expect(await readdir(join(dir, 'out', 'test'))).toContain('current');

      const verified = await runCli(['verify', replayDir]);
      expect(verified.stdout).toContain(': ok (checked');
      expect(verified.code).toBe(0);

      const [original, replayed] = await Promise.all([readManifest(runDir), readManifest(replayDir)]);
      expect(replayed.tables).toEqual(original.tables);
      expect(original.tables.responses).toBeGreaterThan(60);
      expect(await rejectReasons(replayDir)).toEqual(await rejectReasons(runDir));
      for (const table of tableNames) {
        expect(await parquetRows(replayDir, table), table).toEqual(await parquetRows(runDir, table));
        expect(await sortedCsv(join(replayDir, `${table}.csv`)), table).toEqual(
          await sortedCsv(join(runDir, `${table}.csv`)),
        );
      }
      const sheets = (await readdir(join(runDir, 'wide'))).sort();
      expect(sheets.length).toBe(sandbox.studies().length);
      expect((await readdir(join(replayDir, 'wide'))).sort()).toEqual(sheets);
      for (const sheet of sheets) {
        expect(await sortedCsv(join(replayDir, 'wide', sheet)), sheet).toEqual(
          await sortedCsv(join(runDir, 'wide', sheet)),
        );
      }
      // The replayed run's raw/ is the same payloads: it can be replayed in turn.
      expect((await readdir(join(replayDir, 'raw'))).sort()).toEqual(
        (await readdir(join(runDir, 'raw'))).sort(),
      );
    });
  });

  it('asks for RUN_DIR when it is missing, exit 2', async () => {
    const result = await runCli(['replay']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('replay needs RUN_DIR, the run directory to rebuild');
  });

  it('names what is wrong when RUN_DIR is not a run, exit 2', async () => {
    await withTempDir(async (dir) => {
      const result = await runCli(['replay', dir]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`${join(dir, 'manifest.json')}: cannot read the manifest`);
    });
  });
});
