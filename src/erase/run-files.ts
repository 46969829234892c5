/**
 * One run's files as they are once some of its responses are erased, written into `to`: every
 * table file (each format read back and written again, table-formats.ts), the wide sheets and
 * workbooks (sheets.ts), raw/ and rejects.jsonl (payload-files.ts), media.zip (zip-entries.ts);
 * then what describes them, from what was written: README.md and report.html (figures counted
 * from the rows kept), datapackage.json (each file's bytes and sha256) and manifest.json (files,
 * row counts, each study's responses, rejects, warnings, media, and the erasure, no ids).
 *
 * Files that hold no response (studies, questions, list_surveys) are copied when `copyUnchanged`
 * (a run staged whole on a file system) and left out otherwise (object storage, where only the
 * changed objects are uploaded). A file of a kind erase cannot read back is never copied blind:
 * the run is refused before anything changes (`unreadableFiles`).
 */
import { createHash } from 'node:crypto';
import { recordedPipeline } from '../config/recorded.ts';
import { codebookMarkdown } from '../load/codebook.ts';
import { reportHtml } from '../load/report-html.ts';
import { RunStats } from '../load/run-stats.ts';
import { studyFileNames } from '../names.ts';
import { XLSX_DIR } from '../output/formats/xlsx.ts';
import {
  CODEBOOK_FILE,
  DATAPACKAGE_FILE,
  isRawFile,
  MANIFEST_FILE,
  MEDIA_ZIP,
  REJECTS_FILE,
  REPORT_FILE,
} from '../output/layout.ts';
import type { Manifest } from '../output/manifest.ts';
import { copyInto } from '../storage/copy.ts';
import { recordWrites } from '../storage/recorded.ts';
import type { Storage, StoredFile } from '../storage/types.ts';
import { type Row, type TableName, tables } from '../tables/index.ts';
import { namesAny, rewriteRaw, rewriteRejects } from './payload-files.ts';
import { rewriteWideSheet, rewriteWorkbook } from './sheets.ts';
import { tableFormatOf } from './table-formats.ts';
import { rewriteMediaZip } from './zip-entries.ts';

/** What an erasure says of itself in each run's manifest: never an id. */
export interface ManifestErasure {
  id: string;
  at: string;
  responses: number;
  rows: number;
  recordings: number;
}

export type ErasedManifest = Manifest & { erasures?: ManifestErasure[] };

/** What the rewrite took out of one run. */
export interface RunErased {
  responses: number;
  rows: number;
  recordings: number;
  /** Paths written into `to` (changed or copied), manifest.json last. */
  written: string[];
}

const described = new Set([MANIFEST_FILE, DATAPACKAGE_FILE, CODEBOOK_FILE, REPORT_FILE]);

/** Whether erase knows how to read `path` of a run back (or knows it holds no response). */
function readable(path: string): boolean {
  return (
    described.has(path) ||
    tableFormatOf(path) !== null ||
    /^wide\/[^/]+\.csv$/.test(path) ||
    new RegExp(`^${XLSX_DIR}/[^/]+\\.xlsx$`).test(path) ||
    isRawFile(path) ||
    path === REJECTS_FILE ||
    path === MEDIA_ZIP
  );
}

/** The run's files erase cannot read back: a run holding one is left alone, with an error. */
export function unreadableFiles(manifest: Manifest): string[] {
  return manifest.files.map((file) => file.path).filter((path) => !readable(path));
}

const holdsResponses = (table: TableName) => tables[table].columns.some((c) => c.name === 'response_id');

export async function rewriteRun(input: {
  from: Storage;
  to: Storage;
  manifest: Manifest;
  ids: ReadonlySet<string>;
  erasure: { id: string; at: string };
  /** The studies the plan found the responses in (their sheets are rewritten). */
  studies: ReadonlySet<string>;
  copyUnchanged: boolean;
}): Promise<RunErased> {
  const { from, ids, manifest } = input;
  const to = recordWrites(input.to);
  const stats = new RunStats();
  // Sizes as stored now: on object storage a run an erasure stopped in has some files new.
  const bytesOf = new Map<string, number>();
  for await (const file of from.list('')) bytesOf.set(file.path, file.bytes);
  const listed = manifest.files.map((file) => file.path);
  const counted = new Set<TableName>();
  const rowsKept: Record<string, number> = {};
  const erasedByStudy = new Map<string, number>();
  const erasedStudies = new Set<string>(input.studies);
  let rows = 0;
  let recordings = 0;
  let archived = { files: 0, bytes: 0 };
  const copy = async (path: string) => {
    if (input.copyUnchanged) await copyInto(await from.readStream(path), to, path);
  };

  // Tables first, one format each counted for the report: Parquet where there is one.
  const tableFiles = listed
    .map((path) => ({ path, of: tableFormatOf(path) }))
    .sort((a, b) => Number(b.of?.format.name === 'parquet') - Number(a.of?.format.name === 'parquet'));
  for (const { path, of } of tableFiles) {
    if (of === null) continue;
    const { table, format } = of;
    const counting = !counted.has(table);
    counted.add(table);
    if (!holdsResponses(table)) {
      await copy(path);
      if (counting) {
        let kept = 0;
        for await (const batch of format.read(from, path, table, bytesOf.get(path) ?? 0)) {
          stats.add(table, batch);
          kept += batch.length;
        }
        rowsKept[table] = kept;
      }
      continue;
    }
    const writer = await format.create(to, table, recordedPipeline(manifest).output.csv);
    let kept = 0;
    try {
      for await (const batch of format.read(from, path, table, bytesOf.get(path) ?? 0)) {
        const left: Row<TableName>[] = [];
        for (const row of batch) {
          const values = row as Record<string, unknown>;
          if (!ids.has(String(values.response_id))) {
            left.push(row);
            continue;
          }
          if (!counting) continue;
          rows += 1;
          erasedStudies.add(String(values.study_id));
          if (table === 'responses')
            erasedByStudy.set(String(values.study_id), (erasedByStudy.get(String(values.study_id)) ?? 0) + 1);
          if (table === 'media' && values.status === 'archived')
            archived = { files: archived.files + 1, bytes: archived.bytes + Number(values.bytes ?? 0) };
        }
        if (counting) stats.add(table, left);
        kept += left.length;
        await writer.write(left);
      }
      await writer.close();
    } catch (error) {
      await writer.abort();
      throw error;
    }
    if (counting) rowsKept[table] = kept;
  }

  const names = studyFileNames(manifest.studies);
  const touchedSheets = new Set([...erasedStudies].map((id) => names.get(id)));
  for (const path of listed) {
    if (tableFormatOf(path) !== null || described.has(path)) continue;
    const sheet = /^(?:wide|xlsx)\/([^/]+)\.(?:csv|xlsx)$/.exec(path)?.[1];
    if (sheet !== undefined) {
      if (!touchedSheets.has(sheet)) await copy(path);
      else if (path.endsWith('.csv')) await rewriteWideSheet(from, to, path, ids);
      else await rewriteWorkbook(from, to, path, ids);
    } else if (isRawFile(path)) {
      await rewriteRaw(from, to, path, ids);
    } else if (path === REJECTS_FILE) {
      const rejects = await rewriteRejects(from, to, path, ids);
      for (const reason of rejects.reasons) stats.reject(reason);
      manifest.rejects = { ...manifest.rejects, count: rejects.kept };
    } else if (path === MEDIA_ZIP) {
      const zip = await rewriteMediaZip(from, to, path, bytesOf.get(path) ?? 0, ids);
      if (zip === null) {
        await copy(path);
        continue;
      }
      recordings += zip.removed;
      const media = manifest.media as { files?: number; bytes?: number; zip?: object } | null;
      if (media && typeof media === 'object') {
        if (typeof media.files === 'number') media.files -= archived.files;
        if (typeof media.bytes === 'number') media.bytes -= archived.bytes;
        media.zip = { entries: zip.entries, bytes: zip.bytes };
      }
    } else {
      await copy(path);
    }
  }

  const studies = manifest.studies.map((study) => ({
    ...study,
    responses: Math.max(0, study.responses - (erasedByStudy.get(study.study_id) ?? 0)),
  }));
  const responses = [...erasedByStudy.values()].reduce((a, b) => a + b, 0);
  const erasure: ManifestErasure = { ...input.erasure, responses, rows, recordings };
  const next: ErasedManifest = {
    ...manifest,
    studies,
    tables: { ...manifest.tables, ...rowsKept },
    warnings: manifest.warnings.filter((warning) => !namesAny(JSON.stringify(warning), ids)),
    erasures: [...((manifest as ErasedManifest).erasures ?? []), erasure],
  };
  await writeGuides(to, next, stats, listed);
  await writeDataPackage(from, to, listed, to.written());
  const files = await mergeFiles(from, manifest.files, to.written(), bytesOf, input.copyUnchanged);
  await to.put(MANIFEST_FILE, `${JSON.stringify({ ...next, files }, null, 2)}\n`);
  return { responses, rows, recordings, written: to.written().map((file) => file.path) };
}

/**
 * The manifest's list: each file as written now, or where it was left alone as it is stored
 * (hashed again where its size is not the manifest's: a file an earlier, stopped attempt of
 * the erasure had already replaced on object storage).
 */
async function mergeFiles(
  from: Storage,
  before: readonly StoredFile[],
  written: readonly StoredFile[],
  sizes: ReadonlyMap<string, number>,
  whole: boolean,
): Promise<StoredFile[]> {
  const now = new Map(written.map((file) => [file.path, file]));
  const files: StoredFile[] = [];
  for (const file of before) {
    if (file.path === MANIFEST_FILE) continue;
    const rewritten = now.get(file.path);
    if (rewritten) files.push(rewritten);
    else if (!whole) files.push(sizes.get(file.path) === file.bytes ? file : await hashed(from, file.path));
  }
  return files;
}

async function hashed(from: Storage, path: string): Promise<StoredFile> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of await from.readStream(path)) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { path, bytes, sha256: hash.digest('hex') };
}

/** README.md and report.html again, from the rows kept, where the run had them. */
async function writeGuides(
  to: Storage,
  manifest: ErasedManifest,
  stats: RunStats,
  listed: readonly string[],
): Promise<void> {
  const titles = new Map([...stats.studies.values()].map((study) => [study.study_id, study.title]));
  const studies = manifest.studies.map((study) => ({
    study_id: study.study_id,
    link_id: study.link_id,
    title: titles.get(study.study_id) ?? '',
    responses: study.responses,
    since: study.since,
    error: study.error,
  }));
  const common = {
    kind: 'run' as const,
    pipeline: manifest.pipeline,
    service: manifest.config.source.base_url,
    runId: manifest.run_id,
    startedAt: manifest.started_at,
    finishedAt: manifest.finished_at,
    status: manifest.status,
    ...(manifest.sample ? { sample: manifest.sample } : {}),
  };
  if (listed.includes(REPORT_FILE)) {
    await to.put(
      REPORT_FILE,
      reportHtml({
        ...common,
        studies,
        stats,
        warnings: manifest.warnings,
        mediaEnabled: manifest.config.media.enabled,
      }),
    );
  }
  if (listed.includes(CODEBOOK_FILE)) {
    await to.put(
      CODEBOOK_FILE,
      codebookMarkdown({
        ...common,
        studies,
        formats: manifest.config.output.formats,
        files: listed.filter((path) => path !== DATAPACKAGE_FILE && path !== MANIFEST_FILE),
        alsoWritten: [DATAPACKAGE_FILE, MANIFEST_FILE],
      }),
    );
  }
}

/** datapackage.json with each rewritten file's bytes and sha256. */
async function writeDataPackage(
  from: Storage,
  to: Storage,
  listed: readonly string[],
  written: readonly StoredFile[],
): Promise<void> {
  if (!listed.includes(DATAPACKAGE_FILE)) return;
  const text = await from.read(DATAPACKAGE_FILE);
  if (text === null) return;
  const descriptor = JSON.parse(text.toString('utf8')) as { resources?: Record<string, unknown>[] };
  const now = new Map(written.map((file) => [file.path, file]));
  for (const resource of descriptor.resources ?? []) {
    const file = typeof resource.path === 'string' ? now.get(resource.path) : undefined;
    if (file === undefined || !('bytes' in resource)) continue;
    resource.bytes = file.bytes;
    resource.hash = `sha256:${file.sha256}`;
  }
  await to.put(DATAPACKAGE_FILE, `${JSON.stringify(descriptor, null, 2)}\n`);
}
