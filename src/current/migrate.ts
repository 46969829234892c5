/**
 * Outputs of the earlier layout moved into buckets on first use. That layout had a folder per
 * study in each table, current/<table>/study_id=<id>/, whose name held the id %-escaped (or,
 * under an older rule, legacyName(id)), and whose Parquet parts left study_id out where the
 * name gives it back. A hive reader cannot read one glob over both layouts, so every folder the
 * shard owns is moved before its run reads current/:
 *
 * - for each bucket, one part per table: the bucket's newest part without the moved studies'
 *   rows (a move stopped half way may have written it), and each moved study's newest part,
 *   named after the newest run among them (older than the running one, whose parts are newer);
 * - published, then the study folders go, studies last: a move stopped anywhere is done again
 *   by the next run, from the same parts, to the same result.
 *
 * The sheets keep a folder per study (study_id=<id>); only those under the older rule's names
 * are moved to the current ones.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { bucketOf } from '../buckets.ts';
import type { TableFormat } from '../config/schema.ts';
import { idOf, nameOf } from '../names.ts';
import type { CsvOptions } from '../output/formats/csv.ts';
import { studyFormats } from '../output/formats/index.ts';
import { readPart, STUDY_FOLDER_PREFIX } from '../output/formats/parquet-read.ts';
import { CURRENT_DIR } from '../output/layout.ts';
import { compareRunIds } from '../run-id.ts';
import { type Row, type TableName, tableNames } from '../tables/index.ts';
import { createPartWriter, newestPart, parsePartName, partitionPath, publishPart } from './parts.ts';
import type { CurrentStore } from './store.ts';
import { studyFolderName, studyFormatFolder } from './wide.ts';

const reservedNames = /^(con|prn|aux|nul|com\d|lpt\d)(\..*)?$/i;

/** The name the older rule gave `id` (state files, partitions, wide sheets). */
export function legacyName(id: string): string {
  const chars = Array.from(
    id
      .normalize('NFC')
      .replace(/[^\p{L}\p{N}._-]/gu, '_')
      .replace(/^\.+/, (dots) => '_'.repeat(dots.length)),
  ).slice(0, 100);
  while (Buffer.byteLength(chars.join('')) > 200) chars.pop();
  const cleaned = chars.join('');
  if (cleaned === id && cleaned.length > 0 && !reservedNames.test(cleaned)) return cleaned;
  const hash = createHash('sha256').update(id).digest('hex').slice(0, 8);
  return `${cleaned || '_'}-${hash}`;
}

/** A study folder of the earlier layout: its name, its study, and its newest part in each table. */
interface StudyFolder {
  name: string;
  studyId: string;
  /** From its newest `studies` part; null when it has none. */
  linkId: string | null;
  newest: Map<TableName, { path: string; bytes: number; runId: string }>;
}

/**
 * Moves every study folder of current/ whose study `owns` says is this shard's into buckets;
 * see the top. Returns the number of studies moved.
 */
export async function migrateToBuckets(
  store: CurrentStore,
  options: {
    scratchDir: string;
    formats: readonly TableFormat[];
    csv: CsvOptions;
    owns: (studyId: string) => boolean;
  },
): Promise<number> {
  const folders = await studyFolders(store);
  const owned = folders.filter((folder) => options.owns(folder.studyId));
  if (owned.length === 0) return 0;
  const byBucket = new Map<number, StudyFolder[]>();
  for (const folder of owned) {
    const bucket = bucketOf(folder.studyId);
    byBucket.set(bucket, [...(byBucket.get(bucket) ?? []), folder]);
  }
  const dir = await mkdtemp(join(options.scratchDir, 'migrate-'));
  try {
    for (const [bucket, moved] of byBucket) await moveIntoBucket(store, bucket, moved, { ...options, dir });
    for (const folder of owned) await moveSheets(store, folder, dir);
    // studies last: its folder is what says a study is not moved yet.
    for (const table of [...tableNames.filter((t) => t !== 'studies'), 'studies' as const]) {
      for (const folder of owned) await store.deleteAll(`${CURRENT_DIR}/${table}/${folder.name}`);
    }
    return owned.length;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The study folders of the earlier layout, by their `studies` folders (every study has one; it
 * goes last), each table listed once.
 */
async function studyFolders(store: CurrentStore): Promise<StudyFolder[]> {
  const newestOf = new Map<string, StudyFolder['newest']>();
  for (const table of ['studies' as const, ...tableNames.filter((t) => t !== 'studies')]) {
    const filesOf = new Map<string, { name: string; bytes: number }[]>();
    for await (const file of store.list(`${CURRENT_DIR}/${table}`)) {
      const [folder, name, ...rest] = file.path.split('/');
      if (!folder?.startsWith(STUDY_FOLDER_PREFIX) || name === undefined || rest.length > 0) continue;
      if (table !== 'studies' && !newestOf.has(folder)) continue;
      filesOf.set(folder, [...(filesOf.get(folder) ?? []), { name, bytes: file.bytes }]);
    }
    for (const [folder, files] of filesOf) {
      const part = newestPart(files.map((file) => file.name));
      const runId = part === null ? undefined : parsePartName(part)?.runId;
      const newest = newestOf.get(folder) ?? new Map();
      newestOf.set(folder, newest);
      if (part === null || runId === undefined) continue;
      const bytes = files.find((file) => file.name === part)?.bytes ?? 0;
      newest.set(table, { path: `${CURRENT_DIR}/${table}/${folder}/${part}`, bytes, runId });
    }
  }
  const found: StudyFolder[] = [];
  for (const [name, newest] of newestOf)
    found.push({ name, newest, ...(await studyOf(store, name, newest)) });
  return found;
}

/**
 * The study a folder holds and its last link_id: its `studies` rows say (parts under the older
 * rule hold study_id), else its name (and no link_id).
 */
async function studyOf(
  store: CurrentStore,
  name: string,
  newest: StudyFolder['newest'],
): Promise<{ studyId: string; linkId: string | null }> {
  const studies = newest.get('studies');
  if (studies) {
    for await (const rows of readPart(store, studies.path, studies.bytes, 'studies')) {
      const [row] = rows;
      if (row) return { studyId: row.study_id, linkId: row.link_id };
    }
  }
  return { studyId: idOf(name.slice(STUDY_FOLDER_PREFIX.length), '%'), linkId: null };
}

async function moveIntoBucket(
  store: CurrentStore,
  bucket: number,
  moved: readonly StudyFolder[],
  options: { dir: string; formats: readonly TableFormat[]; csv: CsvOptions },
): Promise<void> {
  const movedIds = new Set(moved.map((folder) => folder.studyId));
  for (const table of tableNames) {
    const partition = partitionPath(table, bucket);
    const files: { path: string; bytes: number }[] = [];
    for await (const file of store.list(partition)) if (!file.path.includes('/')) files.push(file);
    const current = newestPart(files.map((file) => file.path));
    const sources = moved.flatMap((folder) => {
      const part = folder.newest.get(table);
      return part ? [part] : [];
    });
    const runIds = [
      ...sources.map((source) => source.runId),
      ...(current === null ? [] : [parsePartName(current)?.runId ?? '']),
    ].filter((runId) => runId !== '');
    const runId = runIds.sort(compareRunIds).at(-1);
    if (runId === undefined) continue;
    const writer = await createPartWriter(table, bucket, runId, {
      formats: options.formats,
      csv: options.csv,
      dir: await mkdtemp(join(options.dir, `${table}-`)),
    });
    try {
      if (current !== null) {
        const bytes = files.find((file) => file.path === current)?.bytes ?? 0;
        for await (const rows of readPart(store, `${partition}/${current}`, bytes, table)) {
          await writer.write(rows.filter((row) => !movedIds.has(String((row as Row<'studies'>).study_id))));
        }
      }
      for (const source of sources) {
        for await (const rows of readPart(store, source.path, source.bytes, table)) await writer.write(rows);
      }
    } catch (error) {
      await writer.abort();
      throw error;
    }
    await publishPart(store, await writer.finish());
  }
}

/** A study's sheet and workbook folders under the older rule's name, moved to the current one. */
async function moveSheets(store: CurrentStore, folder: StudyFolder, scratch: string): Promise<void> {
  const older = `${STUDY_FOLDER_PREFIX}${legacyName(folder.studyId)}`;
  if (older === studyFolderName(folder.studyId)) return;
  const { linkId } = folder;
  if (linkId === null) return;
  for (const format of studyFormats) {
    const from = `${CURRENT_DIR}/${format.folder}/${older}`;
    const to = studyFormatFolder(format, folder.studyId);
    await moveFolder(store, from, to, scratch, `${nameOf(linkId)}${format.extension}`);
  }
}

/** The one sheet of a folder, copied under its new name before the old folder goes. */
async function moveFolder(store: CurrentStore, from: string, to: string, scratch: string, name: string) {
  const files: string[] = [];
  for await (const file of store.list(from)) {
    // Not a file being written (a hidden name), nor anything in a subfolder.
    if (!file.path.includes('/') && !file.path.startsWith('.')) files.push(file.path);
  }
  for (const [i, file] of files.entries()) {
    const local = join(scratch, `sheet-${i}`);
    await pipeline(await store.readStream(`${from}/${file}`), createWriteStream(local));
    await store.moveIn(local, `${to}/${name}`);
  }
  await store.deleteAll(from);
}
