/**
 * `study-export verify RUN_DIR`: re-checks a finished run against its manifest. Every
 * problem is named; nothing stops at the first one.
 *
 * - every file listed in the manifest exists with the listed bytes and sha256, and no file
 *   is there that the manifest does not list;
 * - every table's row count, in every format, equals the manifest's;
 * - primary keys are unique and child tables' response_id values exist in responses;
 * - with xlsx, every exported study has its workbook, and each opens with its three sheets;
 * - media.zip opens, every entry reads to its end, and every archived media row points at
 *   an entry with its bytes and sha256.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import Papa from 'papaparse';
import yauzl from 'yauzl';
import { listRunFiles, type Manifest, readManifest } from '../load/manifest.ts';
import { type TableName, tableNames, tables } from '../load/tables.ts';
import { safeFileName } from '../load/wide.ts';
import { XLSX_DIR } from '../load/xlsx.ts';

export interface VerifyResult {
  ok: boolean;
  problems: string[];
  checked: { files: number; tables: number; rows: number; zipEntries: number };
}

type Values = Record<string, string | null>;

export async function verifyRun(runDir: string): Promise<VerifyResult> {
  const manifest = await readManifest(runDir);
  const problems: string[] = [];
  const checked = { files: 0, tables: 0, rows: 0, zipEntries: 0 };

  await checkFiles(runDir, manifest, problems);
  checked.files = manifest.files.length;

  // Per format: a CSV cell may carry a formula escape that the Parquet value does not.
  const responseIds = { csv: new Set<string>(), parquet: new Set<string>() };
  const mediaRows: Values[] = [];
  // responses first: every other table's foreign key points at it.
  const ordered: TableName[] = ['responses', ...tableNames.filter((t) => t !== 'responses')];
  for (const table of ordered) {
    for (const format of ['csv', 'parquet'] as const) {
      const file = `${table}.${format}`;
      if (!manifest.files.some((f) => f.path === file)) continue;
      const rows = await checkTable(runDir, file, table, format, manifest, problems, (row) => {
        const ids = responseIds[format];
        if (table === 'responses' && row.response_id) ids.add(row.response_id);
        else if (tables[table].foreignKeys.some((fk) => fk.reference.resource === 'responses')) {
          if (row.response_id && !ids.has(row.response_id)) {
            problems.push(`${file}: response_id "${row.response_id}" is not in responses`);
          }
        }
        if (table === 'media' && format === mediaRowsFormat(manifest)) mediaRows.push(row);
      });
      checked.rows += rows;
      checked.tables += 1;
    }
  }
  if (manifest.files.some((f) => f.path === 'media.zip')) {
    checked.zipEntries = await checkZip(join(runDir, 'media.zip'), mediaRows, problems);
  }
  await checkWorkbooks(runDir, manifest, problems);
  return { ok: problems.length === 0, problems, checked };
}

/** The sheets every workbook has (xlsx.ts writes wide, answers, transcript in this order). */
const workbookParts = ['xl/workbook.xml', ...[1, 2, 3].map((n) => `xl/worksheets/sheet${n}.xml`)];

/**
 * With xlsx, every study exported without error has its workbook, and every workbook opens:
 * each part of its zip reads to its end, and its three sheets are there.
 */
async function checkWorkbooks(runDir: string, manifest: Manifest, problems: string[]): Promise<void> {
  const listed = new Set(
    manifest.files.map((f) => f.path).filter((path) => /^xlsx\/[^/]+\.xlsx$/.test(path)),
  );
  if (manifest.config.output.formats.includes('xlsx')) {
    for (const study of manifest.studies) {
      const path = `${XLSX_DIR}/${safeFileName(study.link_id)}.xlsx`;
      if (study.error === null && !listed.has(path))
        problems.push(`${path}: the workbook of ${study.link_id} is missing`);
    }
  }
  for (const path of listed) {
    try {
      const names = await zipEntryNames(join(runDir, path));
      const missing = workbookParts.filter((part) => !names.includes(part));
      if (missing.length > 0) problems.push(`${path}: not a study workbook (no ${missing.join(', ')})`);
    } catch (error) {
      problems.push(`${path}: cannot be read (${(error as Error).message})`);
    }
  }
}

/** The names of a zip's entries, each read to its end (yauzl checks their sizes). */
async function zipEntryNames(zipPath: string): Promise<string[]> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(zipPath, { lazyEntries: true, validateEntrySizes: true }, (error, opened) =>
      error ? reject(error) : resolve(opened),
    ),
  );
  const names: string[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', () => resolve());
      zip.on('entry', (entry: yauzl.Entry) => {
        names.push(entry.fileName);
        zip.openReadStream(entry, (error, stream) => {
          if (error) return reject(error);
          stream.on('error', reject);
          stream.on('end', () => zip.readEntry());
          stream.resume();
        });
      });
      zip.readEntry();
    });
  } finally {
    zip.close();
  }
  return names;
}

async function checkFiles(runDir: string, manifest: Manifest, problems: string[]): Promise<void> {
  const present = new Map((await listRunFiles(runDir)).map((f) => [f.path, f]));
  for (const listed of manifest.files) {
    const actual = present.get(listed.path);
    if (!actual) problems.push(`${listed.path}: listed in the manifest but missing`);
    else if (actual.bytes !== listed.bytes) {
      problems.push(`${listed.path}: ${actual.bytes} bytes, the manifest says ${listed.bytes}`);
    } else if (actual.sha256 !== listed.sha256)
      problems.push(`${listed.path}: sha256 differs from the manifest`);
    present.delete(listed.path);
  }
  for (const extra of present.keys()) problems.push(`${extra}: present but not listed in the manifest`);
}

/** Parquet holds media paths as written; CSV may carry formula escapes, so prefer Parquet. */
function mediaRowsFormat(manifest: Manifest): 'csv' | 'parquet' {
  return manifest.files.some((f) => f.path === 'media.parquet') ? 'parquet' : 'csv';
}

/** Reads one table file row by row: counts rows, checks the primary key, hands rows on. */
async function checkTable(
  runDir: string,
  file: string,
  table: TableName,
  format: 'csv' | 'parquet',
  manifest: Manifest,
  problems: string[],
  onRow: (row: Values) => void,
): Promise<number> {
  const path = join(runDir, file);
  const keys = new Set<string>();
  const primaryKey = tables[table].primaryKey;
  let rows = 0;
  const visit = (row: Values) => {
    rows += 1;
    const key = JSON.stringify(primaryKey.map((column) => row[column] ?? null));
    if (keys.has(key)) problems.push(`${file}: duplicate primary key (${primaryKey.join(', ')}) = ${key}`);
    keys.add(key);
    onRow(row);
  };
  try {
    if (format === 'csv') await readCsvRows(path, table, file, problems, visit);
    else await readParquetRows(path, table, visit);
  } catch (error) {
    problems.push(`${file}: cannot be read (${(error as Error).message})`);
    return rows;
  }
  const expected = manifest.tables[table];
  if (expected !== undefined && expected !== rows) {
    problems.push(`${file}: ${rows} rows, the manifest says ${expected}`);
  }
  return rows;
}

async function readCsvRows(
  path: string,
  table: TableName,
  file: string,
  problems: string[],
  visit: (row: Values) => void,
): Promise<void> {
  const expectedHeader = tables[table].columns.map((c) => c.name);
  await new Promise<void>((resolve, reject) => {
    let headerChecked = false;
    const parser = Papa.parse(Papa.NODE_STREAM_INPUT, { header: true, skipEmptyLines: true });
    parser.on('data', (row: Record<string, string>) => {
      if (!headerChecked) {
        headerChecked = true;
        const header = Object.keys(row).map((h) => h.replace(/^\ufeff/, ''));
        if (header.join(',') !== expectedHeader.join(',')) {
          problems.push(`${file}: header is ${header.join(',')}, expected ${expectedHeader.join(',')}`);
        }
      }
      const values: Values = {};
      for (const [key, value] of Object.entries(row))
        values[key.replace(/^\ufeff/, '')] = value === '' ? null : value;
      visit(values);
    });
    parser.on('end', () => resolve());
    parser.on('error', reject);
    createReadStream(path).on('error', reject).pipe(parser);
  });
}

async function readParquetRows(path: string, table: TableName, visit: (row: Values) => void): Promise<void> {
  const file = await asyncBufferFromFile(path);
  const metadata = await parquetMetadataAsync(file);
  // Only the columns the checks need: the key columns (and what the zip check reads).
  const needed = table === 'media' ? tables.media.columns.map((c) => c.name) : [...tables[table].primaryKey];
  let rowStart = 0;
  for (const group of metadata.row_groups) {
    const rowEnd = rowStart + Number(group.num_rows);
    const rows = await parquetReadObjects({ file, metadata, columns: needed, rowStart, rowEnd });
    for (const row of rows) {
      const values: Values = {};
      for (const [key, value] of Object.entries(row))
        values[key] = value === null || value === undefined ? null : String(value);
      visit(values);
    }
    rowStart = rowEnd;
  }
}

/** Reads every entry to its end (yauzl checks sizes); archived media rows must match. */
async function checkZip(zipPath: string, mediaRows: Values[], problems: string[]): Promise<number> {
  const expected = new Map<string, Values>();
  for (const row of mediaRows) if (row.status === 'archived' && row.file) expected.set(row.file, row);
  let entries = 0;
  try {
    const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
      yauzl.open(zipPath, { lazyEntries: true, validateEntrySizes: true }, (error, opened) =>
        error ? reject(error) : resolve(opened),
      ),
    );
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', () => resolve());
      zip.on('entry', (entry: yauzl.Entry) => {
        entries += 1;
        if (entry.fileName.endsWith('/')) return zip.readEntry();
        zip.openReadStream(entry, (error, stream) => {
          if (error) return reject(error);
          const hash = createHash('sha256');
          let bytes = 0;
          stream.on('data', (chunk: Buffer) => {
            hash.update(chunk);
            bytes += chunk.length;
          });
          stream.on('error', reject);
          stream.on('end', () => {
            const row = expected.get(entry.fileName);
            if (row) {
              if (row.sha256 !== hash.digest('hex') || Number(row.bytes) !== bytes) {
                problems.push(`media.zip: ${entry.fileName} does not match its media row (bytes or sha256)`);
              }
              expected.delete(entry.fileName);
            }
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    });
    zip.close();
  } catch (error) {
    problems.push(`media.zip: cannot be read (${(error as Error).message})`);
  }
  for (const missing of expected.keys())
    problems.push(`media.zip: ${missing} is archived in media but not in the zip`);
  return entries;
}
