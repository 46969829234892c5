/**
 * What a user sees who double-clicks a run's files in LibreOffice Calc, checked headless:
 *
 *   node --import tsx scripts/check-in-libreoffice.ts [RUN_DIR]
 *
 * Without RUN_DIR it first exports the embedded sandbox (./pipeline.yaml, csv, parquet and
 * xlsx, no media) into a temporary folder. Then, for every wide sheet and workbook of the run,
 * `soffice --headless --convert-to xlsx` opens the file with Calc's default import (for a CSV,
 * the text import dialog's defaults: comma, semicolon and tab as separators, '"' as the quote,
 * UTF-8, "Detect special numbers" on) and saves what it read; SheetJS reads that back and the
 * script prints, per file, the rows and columns Calc found against the file's own, the records
 * whose fields landed in other columns, the cells Calc read as dates, the multi-line cells kept
 * whole, and, for a workbook, its sheets, booleans and whether Calc kept each sheet's filter.
 * Exit 1 when Calc read anything other than what the file holds. Needs LibreOffice
 * (Debian: libreoffice-calc-nogui); it is not part of the test suite.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import Papa from 'papaparse';
import XLSX from 'xlsx';

const root = resolve(import.meta.dirname, '..');
/** Calc's text import as its dialog opens by default: separators, quote, UTF-8, row 1, special numbers. */
const csvImport = 'CSV:44/59/9,34,76,1,,0,false,true';
/** The characters a spreadsheet cell holds (Excel's limit; Calc cuts an imported text there too). */
const cellLimit = 32_767;

function soffice(): string {
  const found = spawnSync('sh', ['-c', 'command -v soffice || command -v libreoffice'], { encoding: 'utf8' });
  const path = found.stdout.trim();
  if (!path) {
    console.error(
      'check-in-libreoffice: no soffice on PATH (Debian: apt-get install libreoffice-calc-nogui)',
    );
    process.exit(2);
  }
  return path;
}

/** The file as Calc reads it, saved as xlsx into `outDir` and read back by SheetJS. */
function openInCalc(office: string, file: string, outDir: string, profile: string): XLSX.WorkBook {
  const args = [
    `-env:UserInstallation=file://${profile}`,
    '--headless',
    ...(file.endsWith('.csv') ? [`--infilter=${csvImport}`] : []),
    '--convert-to',
    'xlsx',
    '--outdir',
    outDir,
    file,
  ];
  execFileSync(office, args, { stdio: 'pipe' });
  const saved = join(outDir, basename(file).replace(/\.(csv|xlsx)$/, '.xlsx'));
  return XLSX.read(readFileSync(saved), { cellDates: false, cellNF: true });
}

const rowsOf = (sheet: XLSX.WorkSheet) =>
  XLSX.utils.sheet_to_json<unknown[]>(sheet, { header: 1, defval: null, raw: true });

function checkCsv(office: string, file: string, outDir: string, profile: string): boolean {
  const text = readFileSync(file, 'utf8').replace(/^\ufeff/, '');
  const records = Papa.parse<string[]>(text, { skipEmptyLines: true }).data;
  const width = records[0]?.length ?? 0;
  const book = openInCalc(office, file, outDir, profile);
  const sheet = book.Sheets[book.SheetNames[0] as string] as XLSX.WorkSheet;
  const range = XLSX.utils.decode_range(sheet['!ref'] ?? 'A1');
  const rows = rowsOf(sheet);
  const timeColumns = (records[0] ?? []).flatMap((header, c) => (/\(UTC\)$/.test(header) ? [c] : []));
  let shifted = 0;
  let cut = 0;
  let multiLine = 0;
  let dates = 0;
  let timeCells = 0;
  records.forEach((record, r) => {
    const row = rows[r] ?? [];
    // A field Calc split would push the record past the header's width or move a value.
    const movedAt = record.findIndex((written, c) => {
      const cell = row[c];
      // Calc keeps a line break inside a field as a line feed, whichever the file had.
      const value = written.replace(/\r\n?/g, '\n');
      if (value === '') return cell !== null && cell !== undefined && cell !== '';
      // A spreadsheet cell holds 32,767 characters: Calc cuts a longer text, in its own column.
      if (value.length > cellLimit && typeof cell === 'string' && value.startsWith(cell)) {
        cut++;
        return false;
      }
      if (typeof cell === 'number') return String(cell) !== value && !timeColumns.includes(c);
      return String(cell ?? '') !== value && String(cell ?? '') !== value.replace(/^'/, '');
    });
    if (movedAt >= 0 || row.length > width) {
      shifted++;
      if (shifted <= 3)
        console.log(
          `       record ${r}, column ${movedAt}: the file has ${JSON.stringify(record[movedAt]?.slice(0, 60))}, Calc ${JSON.stringify(String(row[movedAt]).slice(0, 60))}`,
        );
    }
    for (const value of record) if (value.includes('\n')) multiLine++;
    if (r === 0) return;
    for (const c of timeColumns) {
      if (!record[c]) continue;
      timeCells++;
      const cell = sheet[XLSX.utils.encode_cell({ r, c })];
      if (cell?.t === 'n' && XLSX.SSF.is_date(String(cell.z))) dates++;
    }
  });
  const keptLines = rows.flat().filter((cell) => typeof cell === 'string' && cell.includes('\n')).length;
  const ok =
    shifted === 0 && range.e.c + 1 === width && range.e.r + 1 === records.length && dates === timeCells;
  console.log(
    `${ok ? 'ok  ' : 'BAD '} ${file}: Calc read ${range.e.r + 1} rows x ${range.e.c + 1} columns (the file: ${records.length} x ${width}); ` +
      `${shifted} records shifted; ${dates} of ${timeCells} times read as dates; ${keptLines} of ${multiLine} multi-line cells kept` +
      (cut
        ? `; ${cut} texts over 32,767 characters cut by Calc (a spreadsheet's cell limit; the tables hold them whole)`
        : ''),
  );
  const example = rows.flat().find((cell) => typeof cell === 'string' && cell.includes('\n'));
  if (example)
    console.log(
      `       a multi-line cell as Calc holds it: ${JSON.stringify(String(example).slice(0, 120))}`,
    );
  return ok && keptLines === multiLine;
}

function checkWorkbook(office: string, file: string, outDir: string, profile: string): boolean {
  const original = XLSX.read(readFileSync(file), { cellNF: true });
  const book = openInCalc(office, file, join(outDir, 'xlsx'), profile);
  // The workbook part as Calc saved it: it writes a sheet's filter back only if it found it.
  const names = execFileSync('unzip', ['-p', join(outDir, 'xlsx', basename(file)), 'xl/workbook.xml'], {
    encoding: 'utf8',
  });
  let ok = book.SheetNames.join() === original.SheetNames.join();
  const parts: string[] = [`sheets ${book.SheetNames.join(', ')}`];
  for (const name of original.SheetNames) {
    const mine = rowsOf(original.Sheets[name] as XLSX.WorkSheet);
    const calc = rowsOf((book.Sheets[name] ?? {}) as XLSX.WorkSheet);
    const lines = (rows: unknown[][]) =>
      rows.flat().filter((cell) => typeof cell === 'string' && cell.includes('\n')).length;
    const booleans = calc.flat().filter((cell) => typeof cell === 'boolean').length;
    const filtered =
      name === 'About' || names.includes(`localSheetId="${original.SheetNames.indexOf(name)}"`);
    const same = mine.length === calc.length && lines(mine) === lines(calc) && filtered;
    ok &&= same;
    parts.push(
      `${name}: ${calc.length} rows (${mine.length} written), ${lines(calc)} multi-line cells (${lines(mine)})` +
        (booleans ? `, ${booleans} booleans` : '') +
        (name === 'About' ? '' : filtered ? ', filter kept' : ', NO FILTER'),
    );
  }
  console.log(`${ok ? 'ok  ' : 'BAD '} ${file}: ${parts.join('; ')}`);
  return ok;
}

function exportSandbox(dir: string): string {
  const out = join(dir, 'out');
  execFileSync(
    'sh',
    [join(root, 'bin/study-export.js'), 'run', '--out', out, '--formats', 'csv,parquet,xlsx', '--no-media'],
    { cwd: root, stdio: 'inherit' },
  );
  const runs = join(out, 'demo', 'runs');
  const pipelineRuns = readdirSync(out).map((name) => join(out, name, 'runs'));
  const folder = pipelineRuns.find((path) => {
    try {
      return readdirSync(path).length > 0;
    } catch {
      return false;
    }
  });
  const base = folder ?? runs;
  return join(base, readdirSync(base).sort().at(-1) as string);
}

const office = soffice();
const work = mkdtempSync(join(tmpdir(), 'check-in-libreoffice-'));
try {
  const runDir = process.argv[2] ? resolve(process.argv[2]) : exportSandbox(work);
  console.log(`${execFileSync(office, ['--version'], { encoding: 'utf8' }).trim()}, reading ${runDir}`);
  const profile = join(work, 'profile');
  let ok = true;
  const list = (folder: string, suffix: string) => {
    try {
      return readdirSync(join(runDir, folder))
        .filter((name) => name.endsWith(suffix))
        .map((name) => join(runDir, folder, name));
    } catch {
      return [];
    }
  };
  for (const file of list('wide', '.csv')) ok = checkCsv(office, file, join(work, 'calc'), profile) && ok;
  for (const file of list('xlsx', '.xlsx'))
    ok = checkWorkbook(office, file, join(work, 'calc'), profile) && ok;
  console.log(
    ok ? 'LibreOffice read every file as written.' : 'LibreOffice read something else than the files hold.',
  );
  process.exitCode = ok ? 0 : 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}
