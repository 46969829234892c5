/**
 * `study-export verify RUN_DIR`: re-checks a finished run against its manifest, wherever it
 * is stored (a folder or s3://bucket/prefix/<pipeline>/runs/<run id>): every byte is read
 * back through the storage seam. Every problem is named; nothing stops at the first one.
 *
 * - every file listed in the manifest exists with the listed bytes and sha256, and no file
 *   is there that the manifest does not list (an office program's lock file beside a file it
 *   has open is named as such, a note that does not fail the run);
 * - every table's row count, in every format, equals the manifest's;
 * - primary keys are unique and child tables' response_id values exist in responses;
 * - with xlsx, every study the run exported responses of has its workbook, and each opens
 *   with its four sheets;
 * - media.zip opens, every entry reads to its end, and every archived media row points at
 *   an entry with its bytes and sha256.
 */
import { createHash } from 'node:crypto';
import { ConfigError } from '../errors.ts';
import { studyFileNames } from '../names.ts';
import { walkStoredZip } from '../output/codecs/zip-reader.ts';
import { studyFormats, type TableFormatModule, tableFormats } from '../output/formats/index.ts';
import { MANIFEST_FILE, MEDIA_ZIP } from '../output/layout.ts';
import { type Manifest, readManifest } from '../output/manifest.ts';
import { openStorage, type S3Settings } from '../storage/index.ts';
import type { Storage, StoredFile } from '../storage/types.ts';
import { runTableNames, type TableName, tables } from '../tables/index.ts';

export interface VerifyResult {
  ok: boolean;
  problems: string[];
  /** What was found and is no problem: lock files of an office program that had a file open. */
  notes: string[];
  checked: { files: number; tables: number; rows: number; zipEntries: number };
}

type Values = Record<string, string | null>;

/** `runDir` is a run's folder or its s3:// location (with the server's settings, if not AWS's). */
export async function verifyRun(runDir: string, s3: S3Settings = {}): Promise<VerifyResult> {
  const run = await openStorage(runDir, s3);
  const manifest = await manifestOf(run, runDir);
  const problems: string[] = [];
  const notes: string[] = [];
  const checked = { files: 0, tables: 0, rows: 0, zipEntries: 0 };

  const sizes = await checkFiles(run, manifest, problems, notes);
  checked.files = manifest.files.length;

  // Per format: a CSV cell may carry a formula escape that the Parquet value does not.
  const responseIds = new Map(tableFormats.map((format) => [format.name, new Set<string>()]));
  const mediaFormat = mediaRowsFormat(manifest);
  const mediaRows: Values[] = [];
  // responses first: every other table's foreign key points at it.
  const ordered: TableName[] = ['responses', ...runTableNames.filter((t) => t !== 'responses')];
  for (const table of ordered) {
    for (const format of tableFormats) {
      const file = format.tableFile(table);
      if (!manifest.files.some((f) => f.path === file)) continue;
      const rows = await checkTable(run, file, sizes, table, format, manifest, problems, (row) => {
        const ids = responseIds.get(format.name) ?? new Set<string>();
        if (table === 'responses' && row.response_id) ids.add(row.response_id);
        else if (tables[table].foreignKeys.some((fk) => fk.reference.resource === 'responses')) {
          if (row.response_id && !ids.has(row.response_id)) {
            problems.push(`${file}: response_id "${row.response_id}" is not in responses`);
          }
        }
        if (table === 'media' && format === mediaFormat) mediaRows.push(row);
      });
      checked.rows += rows;
      checked.tables += 1;
    }
  }
  if (manifest.files.some((f) => f.path === MEDIA_ZIP)) {
    checked.zipEntries = await checkZip(run, sizes.get(MEDIA_ZIP) ?? 0, mediaRows, problems);
  }
  await checkStudyFiles(run, sizes, manifest, problems);
  return { ok: problems.length === 0, problems, notes, checked };
}

/**
 * Every study exported without error has its file in each format written per study that the
 * run asked for, and each such file passes its format's check.
 */
async function checkStudyFiles(
  run: Storage,
  sizes: Map<string, number>,
  manifest: Manifest,
  problems: string[],
): Promise<void> {
  // Named as the run named them: by link_id, by study where two studies share one.
  const names = studyFileNames(manifest.studies);
  for (const format of studyFormats.filter((candidate) => candidate.selectable)) {
    const listed = new Set(
      manifest.files
        .map((f) => f.path)
        .filter(
          (path) =>
            path.startsWith(`${format.folder}/`) && !path.slice(format.folder.length + 1).includes('/'),
        ),
    );
    if ((manifest.config.output.formats as readonly string[]).includes(format.name)) {
      for (const study of manifest.studies) {
        const path = format.studyFile(names.get(study.study_id) ?? '');
        if (study.error === null && study.responses > 0 && !listed.has(path))
          problems.push(`${path}: the ${format.fileNoun} of ${study.link_id} is missing`);
      }
    }
    for (const path of listed) problems.push(...(await format.verifyFile(run, path, sizes.get(path) ?? 0)));
  }
}

/** The run's manifest; nothing to check is the command line's mistake (exit 2), not a failed check. */
async function manifestOf(run: Storage, runDir: string): Promise<Manifest> {
  const manifest = await readManifest(run);
  if (manifest !== null) return manifest;
  const what = (await isEmpty(run)) ? 'no such run directory' : 'not a run: it has no manifest.json';
  throw new ConfigError(`${runDir}: ${what}; verify takes a run directory (out/<pipeline>/runs/<run id>)`, {
    context: { file: run.describe(MANIFEST_FILE) },
  });
}

/** Whether nothing is there: a folder that does not exist, or a prefix with no object. */
async function isEmpty(run: Storage): Promise<boolean> {
  try {
    for await (const _ of run.list('')) return false;
  } catch {
    // A folder that cannot be listed is not there to verify either.
  }
  return true;
}

/** Every file of the run hashed as read back; returns their sizes by path. */
async function checkFiles(
  run: Storage,
  manifest: Manifest,
  problems: string[],
  notes: string[],
): Promise<Map<string, number>> {
  const present = new Map<string, StoredFile>();
  for await (const file of run.list('')) {
    if (file.path === MANIFEST_FILE) continue;
    const locked = lockedFile(file.path);
    if (locked !== null) {
      notes.push(
        `${file.path}: a lock file of LibreOffice or Excel, left while ${locked} is open in it (or after it closed without removing it); not part of the run`,
      );
      continue;
    }
    present.set(file.path, { path: file.path, ...(await hashStored(run, file.path)) });
  }
  const sizes = new Map([...present.values()].map((file) => [file.path, file.bytes]));
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
  return sizes;
}

/**
 * The file an office lock file stands for, or null: LibreOffice writes `.~lock.<name>#` and
 * Excel `~$<name>` beside a file it has open.
 */
export function lockedFile(path: string): string | null {
  const slash = path.lastIndexOf('/');
  const folder = path.slice(0, slash + 1);
  const name = path.slice(slash + 1);
  const libreOffice = /^\.~lock\.(.+)#$/.exec(name);
  if (libreOffice) return folder + (libreOffice[1] as string);
  if (name.startsWith('~$') && name.length > 2) return `${folder}${name.slice(2)}`;
  return null;
}

async function hashStored(run: Storage, path: string): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of await run.readStream(path)) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { bytes, sha256: hash.digest('hex') };
}

/** The media rows the zip is checked against: an exact format's where the run has one (a CSV may carry formula escapes). */
function mediaRowsFormat(manifest: Manifest): TableFormatModule | undefined {
  const written = tableFormats.filter((format) =>
    manifest.files.some((f) => f.path === format.tableFile('media')),
  );
  return written.find((format) => format.exact) ?? written[0];
}

/** Reads one table file row by row: counts rows, checks the primary key, hands rows on. */
async function checkTable(
  run: Storage,
  file: string,
  sizes: Map<string, number>,
  table: TableName,
  format: TableFormatModule,
  manifest: Manifest,
  problems: string[],
  onRow: (row: Values) => void,
): Promise<number> {
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
    await format.verifyRows(run, file, sizes.get(file) ?? 0, table, problems, visit);
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

/** Reads every entry to its end (yauzl checks sizes); archived media rows must match. */
async function checkZip(
  run: Storage,
  zipBytes: number,
  mediaRows: Values[],
  problems: string[],
): Promise<number> {
  const expected = new Map<string, Values>();
  for (const row of mediaRows) if (row.status === 'archived' && row.file) expected.set(row.file, row);
  let entries = 0;
  try {
    entries = await walkStoredZip(run, MEDIA_ZIP, zipBytes, async (name, stream) => {
      const hash = createHash('sha256');
      let bytes = 0;
      for await (const chunk of stream) {
        hash.update(chunk as Buffer);
        bytes += (chunk as Buffer).length;
      }
      const row = expected.get(name);
      if (!row) return;
      if (row.sha256 !== hash.digest('hex') || Number(row.bytes) !== bytes)
        problems.push(`media.zip: ${name} does not match its media row (bytes or sha256)`);
      expected.delete(name);
    });
  } catch (error) {
    problems.push(`media.zip: cannot be read (${(error as Error).message})`);
  }
  for (const missing of expected.keys())
    problems.push(`media.zip: ${missing} is archived in media but not in the zip`);
  return entries;
}
