/**
 * formats: [csv, parquet, xlsx] against the sandbox: one workbook per study, read back by
 * SheetJS (xlsx), a reader independent of exceljs, and compared cell by cell with the run's
 * Parquet tables and wide CSV: same values, and text as text, numbers as numbers, timestamps
 * as date cells. The raw sheet XML shows the frozen, filtered header.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import XLSX from 'xlsx';
import { workbookFolder } from '../../src/current/index.ts';
import { verifyRun } from '../../src/load/verify.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { hashFile } from '../../src/util/fs.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readHyparquet } from '../helpers/readers.ts';
import { readManifest, runAgainst, sandboxConfig } from '../helpers/run.ts';
import { workbookProblems, workbookXmlProblems } from '../helpers/workbook.ts';

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 17, studies: 3, responses: 6 });
});
afterAll(async () => {
  await sandbox.close();
});

describe('xlsx workbooks', () => {
  it('hold the wide sheet, answers and transcript of each study, cell for cell, with their types', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, {
        output: { formats: ['csv', 'parquet', 'xlsx'], csv: { escape_formulae: false } },
      });
      const result = await runAgainst(sandbox, config);
      const runDir = result.runDir!;
      expect((await verifyRun(runDir)).problems).toEqual([]);
      const manifest = await readManifest(runDir);
      const studies = sandbox.studies();
      const workbooks = manifest.files.filter((f) => f.path.startsWith('xlsx/')).map((f) => f.path);
      expect(workbooks.sort()).toEqual(studies.map((s) => `xlsx/${s.link_id}.xlsx`).sort());

      const { problems, cut } = await workbookProblems(runDir, studies, { escapeFormulae: false });
      expect(problems).toEqual([]);
      // The sandbox's 40,000-character replies are cut, and every cut cell is in the warnings.
      expect(cut).toBeGreaterThan(0);
      const warnings = manifest.warnings.filter((w) => w.code === 'xlsx_cell_cut');
      expect(warnings.length).toBeGreaterThanOrEqual(cut);
      expect(warnings[0]?.message).toMatch(
        /^xlsx\/.+\.xlsx: sheet \w+, row \d+ \(response .+\), column ".+": \d+ characters cut/,
      );
      // Formula-like text was among the cells compared (each a text cell, never a formula).
      const answers = await readHyparquet(join(runDir, 'answers.parquet'));
      expect(answers.some((row) => String(row.answer).startsWith('='))).toBe(true);
    });
  });

  it('are written for the studies a run exported responses of; current/ holds every study whole', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { output: { formats: ['csv', 'parquet', 'xlsx'] } });
      await runAgainst(sandbox, config);
      const [changed, ...others] = sandbox.studies();
      const touched = sandbox.responses(changed!.link_id)[0]!.id;
      sandbox.touchResponse(changed!.link_id, touched);
      const second = (await runAgainst(sandbox, config)).runDir!;
      const manifest = await readManifest(second);
      const byStudy = new Map(manifest.studies.map((s) => [s.study_id, s.responses]));
      expect(byStudy.get(changed!.id)).toBe(1);
      for (const study of others) expect(byStudy.get(study.id)).toBe(0);
      // Only the changed study has a sheet and a workbook in the run: no header-only files.
      const files = manifest.files.map((f) => f.path);
      expect(files.filter((p) => p.startsWith('xlsx/'))).toEqual([`xlsx/${changed!.link_id}.xlsx`]);
      expect(files.filter((p) => p.startsWith('wide/'))).toEqual([`wide/${changed!.link_id}.csv`]);
      expect((await verifyRun(second)).problems).toEqual([]);

      // current/ holds each study's whole workbook: every response, the changed one included.
      const current = join(out, 'test', 'current');
      for (const study of sandbox.studies()) {
        const file = join(out, 'test', workbookFolder(study.id), `${study.link_id}.xlsx`);
        const book = XLSX.read(await readFile(file));
        expect(book.SheetNames).toEqual(['About', 'wide', 'answers', 'transcript']);
        const wide = XLSX.utils.sheet_to_json<Record<string, unknown>>(book.Sheets.wide!);
        expect(wide.map((row) => row.response_id).sort()).toEqual(
          sandbox
            .responses(study.link_id)
            .map((r) => r.id)
            .sort(),
        );
        expect(await workbookXmlProblems(file, study)).toEqual([]);
      }
      // and current/datapackage.json lists them.
      const described = JSON.parse(await readFile(join(current, 'datapackage.json'), 'utf8'));
      const paths = described.resources.map((r: { path: unknown }) => r.path);
      for (const study of sandbox.studies())
        expect(paths).toContain(
          `${workbookFolder(study.id).replace(/^current\//, '')}/${study.link_id}.xlsx`,
        );
    });
  });

  it('verify names a damaged workbook and a missing one, even when the manifest was redone', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { output: { formats: ['csv', 'xlsx'] } });
      const runDir = (await runAgainst(sandbox, config)).runDir!;
      const [first, second] = sandbox.studies().map((s) => `xlsx/${s.link_id}.xlsx`);
      const bytes = await readFile(join(runDir, first!));
      await writeFile(join(runDir, first!), bytes.subarray(0, bytes.length - 100));
      await rm(join(runDir, second!));
      const manifestPath = join(runDir, 'manifest.json');
      const manifest = JSON.parse(await readFile(manifestPath, 'utf8'));
      manifest.files = manifest.files.filter((f: { path: string }) => f.path !== second);
      Object.assign(
        manifest.files.find((f: { path: string }) => f.path === first),
        await hashFile(join(runDir, first!)),
      );
      await writeFile(manifestPath, JSON.stringify(manifest));
      const { problems } = await verifyRun(runDir);
      expect(problems).toEqual([
        expect.stringMatching(new RegExp(`^${second}: the workbook of .+ is missing$`)),
        expect.stringMatching(new RegExp(`^${first}: cannot be read`)),
      ]);
    });
  });

  it('refuses xlsx alone: the tables need csv or parquet', async () => {
    expect(() => sandboxConfig(sandbox, '/tmp/never', { output: { formats: ['xlsx'] } })).toThrow(
      /output\.formats: expected csv or parquet beside xlsx(, \w+)*, e\.g\. \[csv, xlsx\] .*found a list \(\["xlsx"\]\)/,
    );
  });
});
