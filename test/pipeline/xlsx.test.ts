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
import { columnNames, type TableName, tables } from '../../src/load/tables.ts';
import { cutText, excelCellLimit } from '../../src/load/xlsx-workbook.ts';
import { verifyRun } from '../../src/pipeline/verify.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { hashFile } from '../../src/util/fs.ts';
import { readCsv, readHyparquet, tableRow } from '../load/readers.ts';
import { readZip } from '../media/zip.ts';
import { readManifest, runAgainst, sandboxConfig, withTempDir } from './helpers.ts';

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 17, studies: 3, responses: 6 });
});
afterAll(async () => {
  await sandbox.close();
});

type Cell = XLSX.CellObject | undefined;

/** What a cell must be for a value of a declared kind ('' and null are empty cells). */
function cellProblem(cell: Cell, value: unknown, kind: 'text' | 'integer' | 'timestamp'): string | null {
  if (value === null || value === '')
    return cell === undefined ? null : `expected an empty cell, found ${cell.v}`;
  if (cell === undefined) return `expected ${JSON.stringify(value)}, found an empty cell`;
  if (kind === 'integer')
    return cell.t === 'n' && cell.v === Number(value) ? null : `expected number ${value}`;
  if (kind === 'timestamp') {
    const ms = Math.round(((cell.v as number) - 25569) * 86_400_000);
    const isDate = cell.t === 'n' && XLSX.SSF.is_date(String(cell.z));
    return isDate && new Date(ms).toISOString() === value
      ? null
      : `expected date ${value}, found ${cell.t} ${cell.v}`;
  }
  const text = String(value);
  const expected = text.length > excelCellLimit ? cutText(text) : text;
  if (cell.t !== 's' || cell.f !== undefined) return `expected a text cell, found type ${cell.t}`;
  return cell.v === expected ? null : `text differs (${String(cell.v).slice(0, 40)}…)`;
}

function kindOf(table: TableName, column: string): 'text' | 'integer' | 'timestamp' {
  const type = tables[table].columns.find((c) => c.name === column)?.type;
  return type === 'integer' || type === 'timestamp' ? type : 'text';
}

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

      const answers = (await readHyparquet(join(runDir, 'answers.parquet'))).map((r) =>
        tableRow('answers', r),
      );
      const transcript = (await readHyparquet(join(runDir, 'transcript.parquet'))).map((r) =>
        tableRow('transcript', r),
      );
      const problems: string[] = [];
      let cut = 0;
      for (const study of studies) {
        const file = join(runDir, 'xlsx', `${study.link_id}.xlsx`);
        const book = XLSX.read(await readFile(file), { cellNF: true });
        expect(book.SheetNames).toEqual(['wide', 'answers', 'transcript']);

        // wide: the wide CSV's header and rows (escape_formulae off, so the CSV holds the exact text).
        const [header, ...records] = (await readCsv(join(runDir, 'wide', `${study.link_id}.csv`))).records;
        const wide = book.Sheets.wide!;
        expect(XLSX.utils.decode_range(wide['!ref']!).e.r).toBe(records.length);
        header!.forEach((name, c) => {
          const at = XLSX.utils.encode_cell({ r: 0, c });
          if (wide[at]?.v !== name) problems.push(`wide header ${at}: ${wide[at]?.v} vs ${name}`);
          const kind =
            name === 'response_number' ? 'integer' : /_at$/.test(name) && c < 5 ? 'timestamp' : 'text';
          records.forEach((record, r) => {
            const cell = wide[XLSX.utils.encode_cell({ r: r + 1, c })];
            const problem = cellProblem(cell, record[c] ?? null, kind);
            if (problem)
              problems.push(`${study.link_id} wide ${XLSX.utils.encode_cell({ r: r + 1, c })}: ${problem}`);
          });
        });

        for (const [table, rows] of [
          ['answers', answers],
          ['transcript', transcript],
        ] as const) {
          const sheet = book.Sheets[table]!;
          const mine = rows.filter((row) => row.study_id === study.id);
          expect(XLSX.utils.decode_range(sheet['!ref']!).e.r).toBe(mine.length);
          columnNames(table).forEach((name, c) => {
            if (sheet[XLSX.utils.encode_cell({ r: 0, c })]?.v !== name)
              problems.push(`${table} header ${name}`);
            mine.forEach((row, r) => {
              const value = row[name];
              if (typeof value === 'string' && value.length > excelCellLimit) cut++;
              const problem = cellProblem(
                sheet[XLSX.utils.encode_cell({ r: r + 1, c })],
                value,
                kindOf(table, name),
              );
              if (problem) problems.push(`${study.link_id} ${table} row ${r + 2} ${name}: ${problem}`);
            });
          });
        }

        // The header row is frozen and filtered, in every sheet.
        const xml = await readZip(file, ['.xml']);
        for (const n of [1, 2, 3]) {
          const sheetXml = xml.find((e) => e.name === `xl/worksheets/sheet${n}.xml`)?.text ?? '';
          expect(sheetXml).toMatch(/<pane [^>]*ySplit="1"[^>]*state="frozen"/);
          expect(sheetXml).toMatch(/<autoFilter ref="A1:[A-Z]+1"/);
          expect(sheetXml).toMatch(/<col [^>]*width="/);
        }
      }
      expect(problems).toEqual([]);
      // The sandbox's 40,000-character replies are cut, and every cut cell is in the warnings.
      expect(cut).toBeGreaterThan(0);
      const warnings = manifest.warnings.filter((w) => w.code === 'xlsx_cell_cut');
      expect(warnings.length).toBeGreaterThanOrEqual(cut);
      expect(warnings[0]?.message).toMatch(
        /^xlsx\/.+\.xlsx: sheet \w+, row \d+ \(response .+\), column ".+": \d+ characters cut/,
      );
      // Formula-like text is a text cell, never a formula.
      expect(answers.some((row) => String(row.answer).startsWith('='))).toBe(true);
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
      /output\.formats: expected csv or parquet beside xlsx .*found a list \(\["xlsx"\]\)/,
    );
  });
});
