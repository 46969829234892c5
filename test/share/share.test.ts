/**
 * `study-export share` on an output of the sandbox (over HTTP), run as users run it: every file
 * of a package read back by readers this project did not write (DuckDB, hyparquet,
 * parquetjs-lite and parquet-wasm for Parquet, papaparse for CSV, SheetJS for the workbook,
 * the Frictionless `datapackage` library for the descriptor, unzip -t for --zip, ReadStat and
 * haven for the SPSS and Stata files) and compared value by value with current/ as DuckDB reads
 * it; --study chooses; refusals write nothing; runs/, current/ and state/ are byte-identical
 * afterwards.
 */
import { execFile } from 'node:child_process';
import { appendFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nameOf } from '../../src/names.ts';
import { formatNames, studyFormatsOf } from '../../src/output/formats/index.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { columnNames, type TableName, tableNames } from '../../src/tables/index.ts';
import { runCli } from '../helpers/cli.ts';
import { currentTables } from '../helpers/current.ts';
import { validateDataPackage } from '../helpers/frictionless.ts';
import { parquetDisagreements, readCsv } from '../helpers/readers.ts';
import { runAgainst, sandboxConfig, snapshot } from '../helpers/run.ts';
import { declaredVariables, sheetDisagreements } from '../helpers/statistics.ts';
import { workbookProblems } from '../helpers/workbook.ts';
import { unzipTest } from '../helpers/zip.ts';

const run = promisify(execFile);

let sandbox: Sandbox;
let dir: string;
let output: string;
let studies: { study_id: string; link_id: string }[];
let current: Record<TableName, string[]>;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 45, studies: 3, responses: 4 });
  dir = await mkdtemp(join(tmpdir(), 'share-'));
  await runAgainst(
    sandbox,
    // Every format the registry offers: one it gains later is in the packages with no other edit.
    sandboxConfig(sandbox, join(dir, 'out'), { output: { formats: [...formatNames] } }),
  );
  output = join(dir, 'out', 'test');
  current = await currentTables(join(output, 'current'));
  studies = current.studies.map((text) => JSON.parse(text) as { study_id: string; link_id: string });
}, 120_000);
afterAll(async () => {
  await sandbox?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** runs/, current/ and state/ of the output: every file's sha256 and time, every folder's time. */
async function rawOutput(): Promise<Record<string, Record<string, string>>> {
  return {
    runs: await snapshot(join(output, 'runs')),
    current: await snapshot(join(output, 'current')),
    state: await snapshot(join(output, 'state')),
  };
}

/** current/'s rows of one study, as DuckDB reads its partitions, in key order. */
function currentRowsOf(studyId: string): Record<TableName, string[]> {
  const rows = {} as Record<TableName, string[]>;
  for (const table of tableNames)
    rows[table] = current[table].filter(
      (text) => (JSON.parse(text) as { study_id: string }).study_id === studyId,
    );
  return rows;
}

/** Every check of one package folder against current/. */
async function checkPackage(pkg: string, study: { study_id: string; link_id: string }): Promise<void> {
  // Parquet, by DuckDB: the study's rows of current/, value by value.
  const mine = currentRowsOf(study.study_id);
  expect(mine.responses.length).toBeGreaterThan(0);
  expect(await currentTables(pkg, 'run')).toEqual(mine);
  // CSV, by papaparse, against the Parquet file as four other readers read it. A table without
  // rows is its header alone (parquet-wasm refuses a Parquet file with no row group).
  for (const table of tableNames) {
    if (mine[table].length > 0)
      expect(await parquetDisagreements(pkg, table, { escapeFormulae: true }), table).toEqual([]);
    else expect((await readCsv(join(pkg, `${table}.csv`))).records, table).toEqual([columnNames(table)]);
  }
  // The wide sheet: the same bytes as current/'s, which the run wrote from the same rows.
  const sheet = `${nameOf(study.link_id)}.csv`;
  const currentSheet = join(output, 'current', 'wide', `study_id=${study.study_id}`, sheet);
  expect(await readFile(join(pkg, 'wide', sheet), 'utf8')).toBe(await readFile(currentSheet, 'utf8'));
  expect((await readCsv(join(pkg, 'wide', sheet))).records.length).toBe(mine.responses.length + 1);
  // The workbook, by SheetJS, cell by cell against the package's tables and sheet.
  const book = await workbookProblems(pkg, [{ id: study.study_id, link_id: study.link_id }], {
    escapeFormulae: true,
  });
  expect(book.problems).toEqual([]);
  // datapackage.json, by the Frictionless library: valid, every CSV cast, keys and hashes checked.
  const report = await validateDataPackage(pkg);
  expect(report.errors).toEqual([]);
  expect(report.read.responses).toBe(mine.responses.length);
  const descriptor = JSON.parse(await readFile(join(pkg, 'datapackage.json'), 'utf8'));
  // No privacy: section in the pipeline: the package says so, not that --identified was given.
  expect(descriptor.privacy).toEqual({ identified: true, because: 'no privacy profile' });
  const listed = new Set(descriptor.resources.map((r: { path: string }) => r.path));
  // A file for each study format of the registry the output writes (the wide sheet, the workbook, …).
  for (const format of studyFormatsOf(formatNames))
    expect(listed.has(format.studyFile(nameOf(study.link_id))), format.name).toBe(true);
  const files = (await readdir(pkg, { recursive: true, withFileTypes: true }))
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(pkg.length + 1));
  expect(files.filter((file) => !listed.has(file)).sort()).toEqual(['datapackage.json']);
  // The study's data tables, each in both formats, and nothing a run records of itself.
  expect(files.filter((file) => /^[a-z_]+\.(csv|parquet)$/.test(file)).sort()).toEqual(
    tableNames.flatMap((table) => [`${table}.csv`, `${table}.parquet`]).sort(),
  );
  // The SPSS and Stata files (the output writes them): ReadStat's values, variable by variable
  // as haven declares them, against the package's wide sheet; the codebook names each variable.
  const { variables } = await declaredVariables(join(pkg, 'dta', `${nameOf(study.link_id)}.dta`));
  const wide = (await readCsv(join(pkg, 'wide', sheet))).records;
  for (const format of ['sav', 'dta']) {
    const file = join(pkg, format, `${nameOf(study.link_id)}.${format}`);
    expect(
      await sheetDisagreements(file, wide, variables, { readers: ['readstat'], escapeFormulae: true }),
    ).toEqual([]);
  }
  expect(variables.map((v) => v.name)).toContain('q_dg_1');
  // The first page of each guide says the package identifies people.
  const readme = await readFile(join(pkg, 'README.md'), 'utf8');
  expect(readme).toContain('## Variables of the SPSS and Stata files');
  expect(readme).toMatch(/\| `q_dg_1` \| `dg-1` \| [^|]+ \|/);
  const first = readme.split('\n').slice(0, 6).join('\n');
  expect(first).toContain('IDENTIFIED');
  expect(first).toContain('no privacy: section');
  expect(first).not.toContain('--identified');
  expect(first).not.toMatch(/recording/i);
  expect(await readFile(join(pkg, 'report.html'), 'utf8')).toMatch(
    /<h1>[^<]*<\/h1>\n<p class="identified"[^>]*><strong>IDENTIFIED/,
  );
}

describe('study-export share', () => {
  it('packages every study into folders that independent readers read back as current/ holds it', async () => {
    const before = await rawOutput();
    const to = join(dir, 'all');
    const result = await runCli(['share', output, '--to', to]);
    expect(result.stderr).toContain(`[1/${studies.length}] `);
    expect(result.stderr).toMatch(/\] .*: reading current\//);
    expect(result.code).toBe(0);
    expect((await readdir(to)).sort()).toEqual(studies.map((s) => nameOf(s.link_id)).sort());
    for (const study of studies) await checkPackage(join(to, nameOf(study.link_id)), study);
    expect(result.stdout.trim().split('\n')).toHaveLength(studies.length);
    expect(await rawOutput()).toEqual(before);
    // verify checks a package against its datapackage.json; one made without a profile is not scanned.
    const pkg = join(to, nameOf(studies[0]!.link_id));
    const verified = await runCli(['verify', pkg]);
    expect(verified.stdout).toContain(`${pkg}: a valid package`);
    expect(verified.stdout).toContain('identified, not scanned');
    expect(verified.code).toBe(0);
    await writeFile(join(pkg, 'notes.txt'), 'mine');
    await appendFile(join(pkg, 'questions.csv'), 'x\r\n');
    const failed = await runCli(['verify', pkg]);
    expect(failed.stdout).toContain('problem: notes.txt: in the package but not in datapackage.json');
    expect(failed.stdout).toMatch(/problem: questions\.csv: \d+ bytes, datapackage\.json says \d+/);
    expect(failed.code).toBe(1);
  }, 120_000);

  it('takes the studies --study names, as zips that unzip checks and that hold the same package', async () => {
    const [first, second] = studies as [(typeof studies)[number], (typeof studies)[number]];
    const to = join(dir, 'zips');
    const result = await runCli([
      'share',
      output,
      '--study',
      first.link_id,
      '--study',
      second.study_id,
      '--study',
      first.study_id,
      '--to',
      to,
      '--zip',
    ]);
    expect(result.code, result.stderr).toBe(0);
    const zips = [first, second].map((s) => `${nameOf(s.link_id)}.zip`);
    expect((await readdir(to)).sort()).toEqual([...zips].sort());
    for (const [i, zip] of zips.entries()) {
      expect(unzipTest(join(to, zip))).toMatch(/No errors detected/);
      const into = join(dir, 'unzipped', `${i}`);
      await mkdir(into, { recursive: true });
      await run('unzip', ['-q', join(to, zip), '-d', into]);
      // One top folder, named like the zip.
      expect(await readdir(into)).toEqual([zip.slice(0, -'.zip'.length)]);
      await checkPackage(join(into, zip.slice(0, -'.zip'.length)), [first, second][i]!);
    }
  }, 120_000);

  it('refuses an existing package, an unknown study, a destination inside the output and an output without current/, writing nothing', async () => {
    const before = await rawOutput();
    const to = join(dir, 'refused');
    const [study] = studies as [(typeof studies)[number]];
    await mkdir(join(to, nameOf(study.link_id)), { recursive: true });
    await writeFile(join(to, nameOf(study.link_id), 'notes.txt'), 'mine');
    const exists = await runCli(['share', output, '--to', to]);
    expect(exists.code).toBe(2);
    expect(exists.stderr).toContain(
      `${join(to, nameOf(study.link_id))}: exists; a package is never written over`,
    );
    expect((await readdir(to)).sort()).toEqual([nameOf(study.link_id)]);
    expect(await readdir(join(to, nameOf(study.link_id)))).toEqual(['notes.txt']);

    const unknown = await runCli(['share', output, '--study', 'no-such-study', '--to', to]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no-such-study: no study in');
    expect(unknown.stderr).toContain(study.link_id);

    const inside = await runCli(['share', output, '--to', join(output, 'current', 'packages')]);
    expect(inside.code).toBe(2);
    expect(inside.stderr).toContain(`inside the output ${output}; packages go outside it`);

    const empty = join(dir, 'empty-output');
    await mkdir(join(empty, 'runs'), { recursive: true });
    const none = await runCli(['share', empty, '--to', to]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain(`${join(empty, 'current')}: no current dataset`);
    expect((await readdir(to)).sort()).toEqual([nameOf(study.link_id)]);
    expect(await rawOutput()).toEqual(before);
  }, 120_000);
});
