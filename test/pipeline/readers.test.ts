/**
 * Every shipped pipeline, run against the sandbox over loopback, read back by readers this
 * project did not write: the Frictionless reference library for JavaScript validates
 * datapackage.json strictly (every CSV cell cast, keys and relations checked), and DuckDB,
 * hyparquet, parquetjs-lite and parquet-wasm read every Parquet table with the declared types
 * and agree with the CSV cell for cell; SheetJS reads the workbooks of pipelines with xlsx.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPipeline } from '../../src/config/load.ts';
import type { PipelineConfig } from '../../src/config/schema.ts';
import { verifyRun } from '../../src/load/verify.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { columnNames, tableNames } from '../../src/tables/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { validateDataPackage } from '../helpers/frictionless.ts';
import { parquetDisagreements, spreadsheetSplitProblems } from '../helpers/readers.ts';
import { KEY_ENV, readManifest, runAgainst } from '../helpers/run.ts';
import { workbookProblems } from '../helpers/workbook.ts';

const root = resolve(import.meta.dirname, '../..');
let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 13, studies: 3, responses: 8 });
});
afterAll(async () => {
  await sandbox.close();
});

/** A shipped pipeline file with its own settings, pointed at the test sandbox and a temp dir. */
async function shipped(pipeline: string | undefined, out: string): Promise<PipelineConfig> {
  const env = { STUDY_API_BASE_URL: sandbox.base_url, STUDY_API_KEY: sandbox.api_key };
  const { config } = await loadPipeline({ pipeline, cwd: root, env });
  return {
    ...config,
    source: { ...config.source, base_url: sandbox.base_url, api_key_env: KEY_ENV },
    output: { ...config.output, dir: out },
  };
}

/** Everything the independent readers say about a run; [] when they accept it all. */
async function readerProblems(runDir: string, config: PipelineConfig): Promise<string[]> {
  const manifest = await readManifest(runDir);
  const frictionless = await validateDataPackage(runDir);
  const problems = [...frictionless.errors];
  for (const table of tableNames) {
    if (frictionless.read[table] !== manifest.tables[table]) {
      problems.push(
        `datapackage read ${frictionless.read[table]} ${table} rows, manifest ${manifest.tables[table]}`,
      );
    }
    problems.push(
      ...(await parquetDisagreements(runDir, table, { escapeFormulae: config.output.csv.escape_formulae })),
    );
  }
  // Parquet and the other files are read as bytes (this reader reads CSV tables only).
  expect(frictionless.skipped).toEqual(expect.arrayContaining(tableNames.map((t) => `${t}-parquet`)));
  for (const sheet of manifest.files.filter((f) => f.path.startsWith('wide/'))) {
    const name = sheet.path.toLowerCase();
    // With a byte order mark (csv.bom), a sheet is described as a file and read as bytes.
    const read = config.output.csv.bom ? frictionless.skipped : Object.keys(frictionless.read);
    if (!read.some((resource) => resource.startsWith(name)))
      problems.push(`datapackage did not read the wide sheet ${sheet.path}`);
  }
  // Every wide sheet splits into its header's columns the way a spreadsheet's import splits it.
  for (const file of manifest.files.filter((f) => f.path.startsWith('wide/'))) {
    const text = await readFile(join(runDir, file.path), 'utf8');
    problems.push(...spreadsheetSplitProblems(text).map((problem) => `${file.path}: ${problem}`));
  }
  if (config.output.formats.includes('xlsx')) {
    const studies = manifest.studies.map((s) => ({ id: s.study_id, link_id: s.link_id }));
    problems.push(
      ...(await workbookProblems(runDir, studies, { escapeFormulae: config.output.csv.escape_formulae }))
        .problems,
    );
  }
  return problems;
}

describe('every shipped pipeline, read by independent readers', () => {
  const pipelines: [string, string | undefined][] = [
    ['pipeline.yaml (media on, MP4)', undefined],
    ['pipelines/demo.yaml', 'demo'],
    ['pipelines/nightly-incremental.yaml', 'nightly-incremental'],
    ['pipelines/archive-with-media.yaml (BOM on, MP4 and HLS)', 'archive-with-media'],
  ];
  it.each(pipelines)(
    '%s: strict Frictionless validation, four Parquet readers and the workbooks agree with the CSV',
    async (_, name) => {
      await withTempDir(async (out) => {
        const config = await shipped(name, out);
        const result = await runAgainst(sandbox, config);
        expect(result.status).toBe('complete');
        const runDir = result.runDir!;
        expect(await readerProblems(runDir, config)).toEqual([]);
        expect((await verifyRun(runDir)).problems).toEqual([]);
        const manifest = await readManifest(runDir);
        expect(manifest.tables.answers).toBeGreaterThan(0);
        if (config.media.enabled) expect(manifest.tables.media).toBeGreaterThan(0);
      });
    },
  );

  it('the archive pipeline writes its BOM on the wide sheets only, never on a table resource', async () => {
    await withTempDir(async (out) => {
      const config = await shipped('archive-with-media', out);
      expect(config.output.csv.bom).toBe(true);
      const runDir = (await runAgainst(sandbox, config)).runDir!;
      const manifest = await readManifest(runDir);
      const wide = manifest.files.filter((f) => f.path.startsWith('wide/'));
      expect(wide.length).toBeGreaterThan(0);
      for (const file of wide)
        expect((await readFile(join(runDir, file.path))).subarray(0, 3)).toEqual(
          Buffer.from([0xef, 0xbb, 0xbf]),
        );
      for (const table of tableNames) {
        const text = await readFile(join(runDir, `${table}.csv`), 'utf8');
        expect(text.slice(0, text.indexOf('\r\n'))).toBe(columnNames(table).join(','));
      }
    });
  });

  it('the validation can fail: it names a bad timestamp, a duplicate key and an orphan', async () => {
    await withTempDir(async (out) => {
      const config = await shipped(undefined, out);
      const runDir = (await runAgainst(sandbox, { ...config, media: { ...config.media, enabled: false } }))
        .runDir!;
      const edit = async (file: string, change: (lines: string[]) => string[]) => {
        const path = join(runDir, file);
        await writeFile(path, change((await readFile(path, 'utf8')).split('\r\n')).join('\r\n'));
      };
      // A timestamp of a day no month has, the second study twice, an answer whose response is gone.
      await edit('studies.csv', ([header, first, second, ...rest]) => [
        header!,
        first!.replace(/\d{4}-\d\d-\d\d(T\d\d:\d\d:\d\d\.\d{3}Z)/, '2025-02-30$1'),
        second!,
        second!,
        ...rest,
      ]);
      await edit('answers.csv', ([header, first, ...rest]) => [
        header!,
        first!.replace(/^[^,]+/, 'no-such-response'),
        ...rest,
      ]);
      expect(await parquetDisagreements(runDir, 'answers', { escapeFormulae: true })).toEqual(
        ['duckdb', 'hyparquet', 'parquetjs-lite', 'parquet-wasm'].map((reader) =>
          expect.stringMatching(
            new RegExp(`^${reader}: answers row 1 response_id: .* vs CSV "no-such-response"`),
          ),
        ),
      );
      const report = await validateDataPackage(runDir);
      expect(report.errors).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^studies: .*created_at.*datetime/),
          expect.stringMatching(/^studies: .*unique constraint/),
          expect.stringMatching(/^answers: Foreign key "response_id" violation/),
        ]),
      );
    });
  });
});
