/**
 * One run's files as they are once some of its responses are erased, written into `to`: every
 * table file (each format read back and written again, table-formats.ts), the wide sheets and
 * workbooks (sheets.ts), the SPSS and Stata files (study-files.ts), raw/ and rejects.jsonl
 * (payload-files.ts), media.zip (zip-entries.ts);
 * then what describes them, from what was written: README.md and report.html (figures counted
 * from the rows kept), datapackage.json (each file's bytes and sha256) and manifest.json (files,
 * row counts, each study's responses, rejects, warnings, media, and the erasure, no ids).
 *
 * Files that hold no response (studies, questions, list_surveys, a media.zip without the
 * erased recordings) reach the new run through `keepUnchanged` (a run staged whole on a file
 * system links them) and are left out without it (object storage, where only the changed
 * objects are uploaded). A file of a kind erase cannot read back is never copied blind:
 * the run is refused before anything changes (`unreadableFiles`).
 */
import { createHash } from 'node:crypto';
import { recordedPipeline } from '../config/recorded.ts';
import { RunError } from '../errors.ts';
import type { HashingThread } from '../media/hashing-thread.ts';
import { studyFileNames } from '../names.ts';
import type { StatisticsFormat } from '../output/formats/statistics.ts';
import { XLSX_DIR } from '../output/formats/xlsx.ts';
import { codebookMarkdown } from '../output/guide/codebook.ts';
import { reportHtml } from '../output/guide/report-html.ts';
import { RunStats } from '../output/guide/run-stats.ts';
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
import type { WideColumn } from '../records.ts';
import { type RecordedStorage, recordWrites } from '../storage/recorded.ts';
import type { Storage, StoredFile } from '../storage/types.ts';
import { type Row, type TableName, tables } from '../tables/index.ts';
import { filterCsvRecords } from './csv-records.ts';
import { parquetGroupsWriter } from './parquet-groups.ts';
import { namesAny, rewriteRaw, rewriteRejects } from './payload-files.ts';
import { rewriteWideSheet, rewriteWorkbook } from './sheets.ts';
import { rewriteStatisticsFiles, statisticsFormatOf, studyColumns } from './study-files.ts';
import { type TableFileWriter, type TableFormat, tableFormatOf } from './table-formats.ts';
import { rewriteMediaZip, type ZipKept } from './zip-entries.ts';

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
    path === MEDIA_ZIP ||
    statisticsFormatOf(path) !== null
  );
}

/** The run's files erase cannot read back: a run holding one is left alone, with an error. */
export function unreadableFiles(manifest: Manifest): string[] {
  return manifest.files.map((file) => file.path).filter((path) => !readable(path));
}

const holdsResponses = (table: TableName) => tables[table].columns.some((c) => c.name === 'response_id');

export interface RunRewriteInput {
  from: Storage;
  to: Storage;
  manifest: Manifest;
  ids: ReadonlySet<string>;
  erasure: { id: string; at: string };
  /** What the plan found in the run before anything changed: erased responses by study. */
  planned: Readonly<Record<string, number>>;
  /** A local folder for the SPSS and Stata writers' spills. */
  scratchDir: string;
  /** Where media.zip's SHA-256 is computed (another core); else on this thread. */
  hashing?: HashingThread;
  /** How a file the erasure leaves as it is reaches the new run; none: it is left out. */
  keepUnchanged?: (path: string) => Promise<void>;
}

/** What one rewrite of a run gathers as it goes, for the files that describe the run. */
interface Rewrite {
  input: RunRewriteInput;
  to: RecordedStorage;
  stats: RunStats;
  /** Sizes as stored now: on object storage a run an erasure stopped in has some files new. */
  bytesOf: Map<string, number>;
  rowsKept: Record<string, number>;
  rows: number;
  recordings: number;
  archived: { files: number; bytes: number };
  /** Each study's wide columns, where README.md lists its variables (SPSS and Stata files). */
  columns: Map<string, WideColumn[]>;
  copy(path: string): Promise<void>;
}

export async function rewriteRun(input: RunRewriteInput): Promise<RunErased> {
  const { from, ids, manifest } = input;
  const to = recordWrites(input.to);
  const bytesOf = new Map<string, number>();
  for await (const file of from.list('')) bytesOf.set(file.path, file.bytes);
  const rewrite: Rewrite = {
    input,
    to,
    stats: new RunStats(),
    bytesOf,
    rowsKept: {},
    rows: 0,
    recordings: 0,
    archived: { files: 0, bytes: 0 },
    columns: new Map(),
    copy: async (path) => {
      await input.keepUnchanged?.(path);
    },
  };
  const listed = manifest.files.map((file) => file.path);
  // media.zip, most of a run's bytes, copied on the hashing thread while this one does the rest.
  const zipping = listed.includes(MEDIA_ZIP)
    ? rewriteMediaZip(from, to, MEDIA_ZIP, bytesOf.get(MEDIA_ZIP) ?? 0, ids, input.hashing)
    : null;
  try {
    await rewriteTables(rewrite, listed);
    await rewriteOtherFiles(rewrite, listed);
  } catch (error) {
    // Not left writing into a folder the caller is about to remove.
    await zipping?.catch(() => {});
    throw error;
  }
  if (zipping) await keptMediaZip(rewrite, await zipping);

  // The manifest this rewrite starts from is the run's before the erasure: the plan's counts apply.
  const studies = manifest.studies.map((study) => ({
    ...study,
    responses: Math.max(0, study.responses - (input.planned[study.study_id] ?? 0)),
  }));
  const responses = Object.values(input.planned).reduce((a, b) => a + b, 0);
  const { rows, recordings } = rewrite;
  const erasure: ManifestErasure = { ...input.erasure, responses, rows, recordings };
  const next: ErasedManifest = {
    ...manifest,
    studies,
    tables: { ...manifest.tables, ...rewrite.rowsKept },
    warnings: manifest.warnings.filter((warning) => !namesAny(JSON.stringify(warning), ids)),
    erasures: [...((manifest as ErasedManifest).erasures ?? []), erasure],
  };
  await writeGuides(to, next, rewrite, listed);
  await writeDataPackage(from, to, listed, to.written());
  const files = await mergeFiles(
    from,
    manifest.files,
    to.written(),
    bytesOf,
    input.keepUnchanged !== undefined,
  );
  await to.put(MANIFEST_FILE, `${JSON.stringify({ ...next, files }, null, 2)}\n`);
  return { responses, rows, recordings, written: to.written().map((file) => file.path) };
}

/**
 * Every table: read back once, from its exact format where the run has one (Parquet, whose
 * values read back as written; else CSV), and written without the erased responses into each
 * format the run has it in, as the run wrote them from the same values. Tables that hold no
 * response are copied. The rows read are counted for the report and the manifest.
 */
async function rewriteTables(rewrite: Rewrite, listed: readonly string[]): Promise<void> {
  const { from, ids, manifest } = rewrite.input;
  const byTable = new Map<TableName, { path: string; format: TableFormat }[]>();
  for (const path of listed) {
    const of = tableFormatOf(path);
    if (of) byTable.set(of.table, [...(byTable.get(of.table) ?? []), { path, format: of.format }]);
  }
  for (const [table, files] of byTable) {
    const source = files.find((file) => file.format.exact) ?? (files[0] as (typeof files)[number]);
    const rows = source.format.read(from, source.path, table, rewrite.bytesOf.get(source.path) ?? 0);
    let kept = 0;
    if (!holdsResponses(table)) {
      for (const file of files) await rewrite.copy(file.path);
      for await (const batch of rows) {
        rewrite.stats.add(table, batch);
        kept += batch.length;
      }
      rewrite.rowsKept[table] = kept;
      continue;
    }
    const csv = recordedPipeline(manifest).output.csv;
    // CSV files are filtered as bytes (csv-records.ts); the other formats written again.
    const filtered = files.filter((file) => file.format.erasedBy === 'csv-records');
    const writers: TableFileWriter[] = [];
    // The Parquet file read: its row groups without an erased response copied as they lie.
    const groups =
      source.format.erasedBy === 'row-groups'
        ? await parquetGroupsWriter(
            from,
            rewrite.to,
            source.path,
            rewrite.bytesOf.get(source.path) ?? 0,
            table,
          )
        : null;
    if (groups)
      writers.push({ write: async () => {}, close: () => groups.close(), abort: () => groups.abort() });
    let erased = 0;
    try {
      for (const file of files)
        if (!filtered.includes(file) && !(groups && file === source))
          writers.push(await file.format.create(rewrite.to, table, csv));
      for await (const batch of rows) {
        const left: Row<TableName>[] = [];
        for (const row of batch) {
          if (ids.has(String((row as { response_id?: unknown }).response_id))) {
            countErased(rewrite, table, row);
            erased += 1;
          } else left.push(row);
        }
        rewrite.stats.add(table, left);
        kept += left.length;
        await groups?.group(batch.length, left);
        for (const writer of writers) await writer.write(left);
      }
      for (const writer of writers) await writer.close();
    } catch (error) {
      for (const writer of writers) await writer.abort();
      throw error;
    }
    for (const file of filtered) {
      const removed = await filterCsvRecords(from, rewrite.to, file.path, 'response_id', ids);
      if (removed !== erased)
        throw new RunError(
          `${from.describe(file.path)} holds ${removed} rows of the erased responses where ${source.path} holds ${erased}; nothing of this run was changed`,
        );
    }
    rewrite.rowsKept[table] = kept;
  }
}

function countErased(rewrite: Rewrite, table: TableName, row: Row<TableName>): void {
  const values = row as Record<string, unknown>;
  rewrite.rows += 1;
  if (table === 'media' && values.status === 'archived') {
    rewrite.archived.files += 1;
    rewrite.archived.bytes += Number(values.bytes ?? 0);
  }
}

/** The study files, raw/ and rejects.jsonl; anything else but media.zip (rewriteRun's) copied. */
async function rewriteOtherFiles(rewrite: Rewrite, listed: readonly string[]): Promise<void> {
  const { from, ids, manifest } = rewrite.input;
  const { to } = rewrite;
  const names = studyFileNames(manifest.studies);
  const touchedSheets = new Set(Object.keys(rewrite.input.planned).map((id) => names.get(id)));
  // The SPSS and Stata files of the studies that held an erased response, written anew below.
  const rewritten = new Map<string, StatisticsFormat[]>();
  for (const path of listed) {
    if (tableFormatOf(path) !== null || described.has(path)) continue;
    const sheet = /^(?:wide|xlsx)\/([^/]+)\.(?:csv|xlsx)$/.exec(path)?.[1];
    const statistics = statisticsFormatOf(path);
    if (statistics !== null) {
      const name = /^[^/]+\/([^/]+)\.[^.]+$/.exec(path)?.[1] ?? '';
      if (touchedSheets.has(name)) rewritten.set(name, [...(rewritten.get(name) ?? []), statistics]);
      else await rewrite.copy(path);
    } else if (sheet !== undefined) {
      if (!touchedSheets.has(sheet)) await rewrite.copy(path);
      else if (path.endsWith('.csv')) await rewriteWideSheet(from, to, path, ids);
      else await rewriteWorkbook(from, to, path, ids);
    } else if (isRawFile(path)) {
      await rewriteRaw(from, to, path, ids);
    } else if (path === REJECTS_FILE) {
      const rejects = await rewriteRejects(from, to, path, ids);
      for (const reason of rejects.reasons) rewrite.stats.reject(reason);
      manifest.rejects = { ...manifest.rejects, count: rejects.kept };
    } else if (path !== MEDIA_ZIP) {
      await rewrite.copy(path);
    }
  }
  // With SPSS or Stata files, README.md lists each study's variables: their columns now.
  if (!listed.some((path) => statisticsFormatOf(path) !== null)) return;
  for (const study of manifest.studies) {
    const fileName = names.get(study.study_id) ?? '';
    const formats = rewritten.get(fileName);
    const of = {
      ...{ from, listed, bytesOf: rewrite.bytesOf, ids },
      study: {
        study_id: study.study_id,
        link_id: study.link_id,
        title: rewrite.stats.studies.get(study.study_id)?.title ?? '',
      },
    };
    const columns = formats
      ? await rewriteStatisticsFiles({ ...of, to, fileName, formats, scratchDir: rewrite.input.scratchDir })
      : await studyColumns(of);
    rewrite.columns.set(study.study_id, columns);
  }
}

/** media.zip as rewritten (its counts into the manifest), or left as it is when it held none. */
async function keptMediaZip(rewrite: Rewrite, zip: ZipKept | null): Promise<void> {
  if (zip === null) {
    await rewrite.copy(MEDIA_ZIP);
    return;
  }
  rewrite.recordings += zip.removed;
  const media = rewrite.input.manifest.media as { files?: number; bytes?: number; zip?: object } | null;
  if (media && typeof media === 'object') {
    if (typeof media.files === 'number') media.files -= rewrite.archived.files;
    if (typeof media.bytes === 'number') media.bytes -= rewrite.archived.bytes;
    media.zip = { entries: zip.entries, bytes: zip.bytes };
  }
}

/**
 * The manifest's list: each file as written now, or where it was left alone its entry as it
 * was (`whole`: the new run holds it unchanged) or as it is stored (hashed again where its size
 * is not the manifest's: a file an earlier, stopped attempt of the erasure had already replaced
 * on object storage).
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
    else if (whole) files.push(file);
    else files.push(sizes.get(file.path) === file.bytes ? file : await hashed(from, file.path));
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
  { stats, columns }: Pick<Rewrite, 'stats' | 'columns'>,
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
    columns: columns.get(study.study_id),
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
