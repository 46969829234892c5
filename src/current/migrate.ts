/**
 * Partitions written under the earlier naming rule, moved to the names of src/names.ts on
 * first use. That rule kept letters of any case, digits, ".", "_" and "-", replaced anything
 * else with "_" and marked a changed name with "-<8 hex of its SHA-256>"; a uuid's name is the
 * same under both, so only other ids have anything to move.
 *
 * A study's old partitions (every table's, its wide sheet's and workbook's) are moved before the run
 * reads them, file by file, each copied to its new name before the old one is removed: a run
 * stopped half way leaves every file under one name or both, and the next run moves what is
 * left. An old folder is moved only when its `studies` part names the study: under the
 * earlier rule two ids could share a folder, which then stays with the id whose name it is.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { type TableName, tableNames } from '../load/tables.ts';
import { nameOf } from '../names.ts';
import { CURRENT_DIR, newestPart, partitionName, partitionPath, readPart } from './parts.ts';
import type { CurrentStore } from './store.ts';
import { wideFolder, workbookFolder } from './wide.ts';

const reservedNames = /^(con|prn|aux|nul|com\d|lpt\d)(\..*)?$/i;

/** The name the earlier rule gave `id` (state files, partitions, wide sheets). */
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

function legacyPartition(table: TableName | 'wide' | 'xlsx', studyId: string): string {
  return `${CURRENT_DIR}/${table}/study_id=${legacyName(studyId)}`;
}

/**
 * Moves the study's partitions from their earlier names, if it has any there; see the top.
 * Returns whether it moved any.
 */
export async function migrateStudyPartitions(
  store: CurrentStore,
  studyId: string,
  scratchDir: string,
): Promise<boolean> {
  if (`study_id=${legacyName(studyId)}` === partitionName(studyId)) return false;
  const owner = await ownerOf(store, legacyPartition('studies', studyId));
  if (owner === null || owner.study_id !== studyId) return false;
  const dir = await mkdtemp(join(scratchDir, 'migrate-'));
  const same = (name: string) => name;
  try {
    // The sheet and the workbook take their link_id's name too (one of each per folder).
    await moveFolder(store, legacyPartition('wide', studyId), wideFolder(studyId), dir, () => {
      return `${nameOf(owner.link_id)}.csv`;
    });
    await moveFolder(store, legacyPartition('xlsx', studyId), workbookFolder(studyId), dir, () => {
      return `${nameOf(owner.link_id)}.xlsx`;
    });
    // studies last: its old folder is what says the move is not finished (ownerOf).
    for (const table of [...tableNames.filter((t) => t !== 'studies'), 'studies' as const]) {
      await moveFolder(store, legacyPartition(table, studyId), partitionPath(table, studyId), dir, same);
    }
    return true;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The study an old partition holds, by its newest `studies` part; null when it has none. */
async function ownerOf(
  store: CurrentStore,
  folder: string,
): Promise<{ study_id: string; link_id: string } | null> {
  const files: { path: string; bytes: number }[] = [];
  for await (const file of store.list(folder)) files.push(file);
  const newest = newestPart(files.map((file) => file.path));
  if (newest === null) return null;
  const bytes = files.find((file) => file.path === newest)?.bytes ?? 0;
  for await (const rows of readPart(store, `${folder}/${newest}`, bytes, 'studies')) {
    const [row] = rows;
    if (row) return { study_id: row.study_id, link_id: row.link_id };
  }
  return null;
}

async function moveFolder(
  store: CurrentStore,
  from: string,
  to: string,
  scratch: string,
  rename: (name: string) => string,
): Promise<void> {
  const files: string[] = [];
  for await (const file of store.list(from)) {
    // Not a file being written (a hidden name), nor anything in a subfolder.
    if (!file.path.includes('/') && !file.path.startsWith('.')) files.push(file.path);
  }
  for (const [i, name] of files.entries()) {
    const local = join(scratch, `file-${i}`);
    await pipeline(await store.readStream(`${from}/${name}`), createWriteStream(local));
    await store.moveIn(local, `${to}/${rename(name)}`);
  }
  // Only once every file is under its new name.
  for (const name of files) await store.delete(`${from}/${name}`);
  await store.deleteAll(from);
}
