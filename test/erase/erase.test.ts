/**
 * `study-export erase` on a folder: the response's id, the answers only it gave and its
 * recordings' checksums are in no byte of the output afterwards (every file opened:
 * test/helpers/output-scan.ts), every run verifies, the other responses are unchanged value by
 * value, erasures/ says what was done without naming the response; bad input changes nothing.
 */
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifyRun } from '../../src/load/verify.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { runCli, sandboxPipeline } from '../helpers/cli.ts';
import { withTempDir } from '../helpers/environment.ts';
import {
  currentRowsWithout,
  markResponses,
  progressOnly,
  readJson,
  rowsWithout,
  tracesOf,
  twoRuns,
} from '../helpers/erase.ts';
import { scanOutput } from '../helpers/output-scan.ts';
import { duckdb, readHyparquet } from '../helpers/readers.ts';
import { snapshot } from '../helpers/run.ts';
import { unzipTest, zipFactsByPython } from '../helpers/zip.ts';

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 11, studies: 3, responses: 8 });
  markResponses(sandbox);
});
afterAll(async () => {
  await sandbox.close();
});

it('erases a response from every file of every run and from current/', async () => {
  await withTempDir(async (dir) => {
    const { runs } = await twoRuns(sandbox, dir);
    const output = join(dir, 'test');
    const traces = await tracesOf(runs[0] as string);
    expect(traces.texts.length).toBeGreaterThan(0);
    expect(traces.checksums.length).toBeGreaterThan(0);
    // The scanner finds every trace before: it could fail.
    const before = await scanOutput(output, [traces.id, ...traces.texts], traces.checksums);
    for (const needle of [traces.id, ...traces.texts, ...traces.checksums])
      expect(
        before.some((found) => found.needle === needle),
        needle,
      ).toBe(true);
    const others = await Promise.all(runs.map((run) => rowsWithout(run, traces.id)));
    const otherCurrent = await currentRowsWithout(output, traces.id);
    const groupsBefore = await Promise.all(runs.map((run) => rowGroups(join(run, 'transcript.parquet'))));

    const erased = await runCli(['erase', output, '--response', traces.id]);
    expect(erased.code).toBe(0);
    // Progress on stderr, a line per run and one for current/ as each ends; never an id.
    const lines = erased.stderr.trim().split('\n');
    expect(lines.filter((line) => line.startsWith('current/'))).toEqual([
      'current/: 1 study rewritten without them',
    ]);
    const runLines = lines.filter((line) => !line.startsWith('current/'));
    expect(runLines.map((line) => line.slice(0, 5))).toEqual(['[1/2]', '[2/2]']);
    expect(
      runLines.map((line) => /^\[\d\/2\] run (\S+): rewritten without them$/.exec(line)?.[1]).sort(),
    ).toEqual(runs.map((run) => run.split('/').at(-1)).sort());
    expect(erased.stderr).not.toContain(traces.id);
    expect(erased.stdout).toMatch(/1 response\(s\) out of 2 run\(s\)/);

    expect(await scanOutput(output, [traces.id, ...traces.texts], traces.checksums)).toEqual([]);
    for (const run of runs) {
      expect((await verifyRun(run)).problems).toEqual([]);
      // Info-ZIP and Python read the new media.zip: every entry's CRC, names without the response.
      expect(unzipTest(join(run, 'media.zip'))).toMatch(/No errors detected/);
      const names = zipFactsByPython(join(run, 'media.zip')).map((entry) => entry.name);
      expect(names.length).toBeGreaterThan(0);
      expect(names.filter((name) => name.includes(traces.id))).toEqual([]);
    }
    expect(await Promise.all(runs.map((run) => rowsWithout(run, traces.id)))).toEqual(others);
    // Row groups without the response are the same groups (DuckDB's footer view); one is new.
    for (const [index, run] of runs.entries()) {
      const before = groupsBefore[index] as string[];
      const after = await rowGroups(join(run, 'transcript.parquet'));
      expect(after).toHaveLength(before.length);
      expect(after.filter((group) => before.includes(group))).toHaveLength(before.length - 1);
    }
    expect(groupsBefore.some((groups) => groups.length > 1)).toBe(true);
    expect(await currentRowsWithout(output, traces.id)).toEqual(otherCurrent);
    // Every partition of current/ holds one part again.
    for (const table of await readdir(join(output, 'current', 'answers')))
      expect(
        (await readdir(join(output, 'current', 'answers', table))).filter((n) => n.endsWith('.parquet')),
      ).toHaveLength(1);

    const [record] = (await readdir(join(output, 'erasures'))).filter((name) => name.endsWith('.json'));
    const erasure = await readJson<{
      runs: { run_id: string; responses: number; rows: number; recordings: number }[];
    }>(join(output, 'erasures', record as string));
    expect(erasure.runs.map((run) => run.run_id)).toEqual(runs.map((run) => run.split('/').at(-1)));
    for (const run of erasure.runs) {
      expect(run.responses).toBe(1);
      expect(run.recordings).toBeGreaterThanOrEqual(traces.checksums.length);
    }
    const manifest = await readJson<{ tables: Record<string, number> }>(
      join(runs[0] as string, 'manifest.json'),
    );
    expect(manifest.tables.responses).toBe(
      (await readHyparquet(join(runs[0] as string, 'responses.parquet'))).length,
    );

    // The same id again: the output holds it no more.
    const again = await runCli(['erase', output, '--response', traces.id]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(traces.id);
  });
});

/** Each row group of a Parquet file as DuckDB reads its footer: rows, sizes and statistics. */
function rowGroups(path: string): Promise<string[]> {
  return duckdb(async (query) => {
    const chunks = await query(
      `select row_group_id, row_group_num_rows, path_in_schema, total_compressed_size, stats_min_value, stats_max_value from parquet_metadata('${path}') order by row_group_id, path_in_schema`,
    );
    const groups = new Map<unknown, unknown[]>();
    for (const { row_group_id, ...chunk } of chunks)
      groups.set(row_group_id, [...(groups.get(row_group_id) ?? []), chunk]);
    return [...groups.values()].map((group) =>
      JSON.stringify(group, (_k, v) => (typeof v === 'bigint' ? String(v) : v)),
    );
  });
}

it('refuses bad input and a held lock, changing nothing', async () => {
  await withTempDir(async (dir) => {
    await twoRuns(sandbox, dir, { media: { enabled: false } });
    const output = join(dir, 'test');
    const before = await snapshot(output);
    const unknown = await runCli(['erase', output, '--response', 'no-such-response']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no-such-response');
    const nothing = await runCli(['erase', output, '--attribute', 'utm_source=nowhere-at-all']);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toContain('utm_source=nowhere-at-all');
    const neither = await runCli(['erase', output]);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toMatch(/--response ID or --attribute KEY=VALUE/);
    expect(await snapshot(output)).toEqual(before);

    // Another process (this test's) holds the output's lock: the exit of a run refused for it.
    await writeFile(join(output, '.lock'), String(process.pid));
    const [id] = sandbox.responses(sandbox.studies()[0]?.link_id as string).map((r) => r.id);
    const locked = await runCli(['erase', output, '--response', id as string]);
    await writeFile(join(dir, 'test.yaml'), sandboxPipeline(sandbox.base_url, { name: 'test' }));
    const run = await runCli(['run', '--config', join(dir, 'test.yaml'), '--out', dir, '--full'], {
      env: { STUDY_API_KEY: sandbox.api_key },
    });
    expect(run.stderr).toMatch(/in progress/);
    expect(locked.stderr).toMatch(/in progress/);
    expect(locked.code).toBe(run.code);
    expect(locked.code).not.toBe(0);
  });
});

it('chooses responses by attribute', async () => {
  await withTempDir(async (dir) => {
    const { runs } = await twoRuns(sandbox, dir, { media: { enabled: false } });
    const output = join(dir, 'test');
    const attributes = await readHyparquet(join(runs[0] as string, 'attributes.parquet'));
    const chosen = attributes[0] as { key: string; value: string };
    const ids = new Set(
      attributes
        .filter((row) => row.key === chosen.key && row.value === chosen.value)
        .map((row) => row.response_id),
    );
    const erased = await runCli(['erase', output, '--attribute', `${chosen.key}=${chosen.value}`]);
    expect(progressOnly(erased.stderr)).toEqual([]);
    expect(erased.code).toBe(0);
    for (const run of runs) {
      const left = (await readHyparquet(join(run, 'responses.parquet'))).map((row) => row.response_id);
      expect(left.filter((id) => ids.has(id))).toEqual([]);
      expect((await verifyRun(run)).problems).toEqual([]);
    }
    expect(await scanOutput(output, [...ids].map(String))).toEqual([]);
  });
});
