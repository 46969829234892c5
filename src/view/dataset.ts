/**
 * What the viewer shows, read once from a run (a folder or s3://…/runs/<id>) or from a
 * pipeline's current/ dataset: the tables, grouped by response, and where each recording's
 * bytes are. Everything is read through the storage seam; nothing is written.
 *
 * A run's recordings are in its own media.zip. current/ has none: its media rows point into
 * the media.zip of the run that exported them, so the runs/ folder beside current/ is
 * searched (newest run first) for an entry of that name and size.
 */
import { dirname, resolve } from 'node:path';
import Papa from 'papaparse';
import { newestPart, parsePartName, readPart } from '../current/index.ts';
import { RunError } from '../errors.ts';
import { MANIFEST_FILE, type Manifest } from '../load/manifest.ts';
import { compareRunIds } from '../run-id.ts';
import { isObjectStorage, openStorage, type S3Settings } from '../storage/index.ts';
import type { Storage } from '../storage/types.ts';
import { type Row, type TableName, tables } from '../tables/index.ts';
import { type ZipEntry, ZipIndex } from './zip-index.ts';

export type Located = { zip: ZipIndex; entry: ZipEntry } | { reason: string };

export interface ViewData {
  kind: 'run' | 'current';
  location: string;
  pipeline: string;
  /** The run; for current/, the newest part's run. */
  runId: string;
  /** report.html of the run, when it has one. */
  hasReport: boolean;
  storage: Storage;
  studies: Row<'studies'>[];
  responses: Map<string, Row<'responses'>>;
  responsesByStudy: Map<string, Row<'responses'>[]>;
  answers: Map<string, Row<'answers'>[]>;
  transcript: Map<string, Row<'transcript'>[]>;
  attributes: Map<string, Row<'attributes'>[]>;
  media: Map<string, Row<'media'>[]>;
  /** Where a media row's archived bytes are, or why they cannot be played. */
  locate(row: Row<'media'>): Promise<Located>;
}

type Rows = { [T in TableName]: Row<T>[] };

export async function openViewData(location: string, s3: S3Settings = {}): Promise<ViewData> {
  const storage = await openStorage(location, s3);
  // A missing file reads as null; any other failure (credentials, a bucket) is the user's to see.
  const manifestText = await storage.read(MANIFEST_FILE);
  if (manifestText) {
    const manifest = JSON.parse(manifestText.toString('utf8')) as Manifest;
    const rows = await readRunTables(storage, manifest);
    const zipFile = manifest.files.find((file) => file.path === 'media.zip');
    let zip: Promise<ZipIndex> | null = null;
    const locate = async (row: Row<'media'>): Promise<Located> => {
      if (row.status !== 'archived' || !row.file)
        return { reason: `the download failed: ${row.error ?? 'no reason given'}` };
      if (!zipFile) return { reason: 'this run has no media.zip' };
      zip ??= ZipIndex.open(storage, 'media.zip', zipFile.bytes);
      const index = await zip;
      const entry = index.entries.get(row.file);
      return entry ? { zip: index, entry } : { reason: `${row.file} is not in media.zip` };
    };
    return build('run', location, manifest.pipeline, manifest.run_id, storage, rows, locate, {
      hasReport: manifest.files.some((file) => file.path === 'report.html'),
    });
  }
  const partsOf = await currentParts(storage);
  if (partsOf.size === 0) {
    throw new RunError(
      `${location}: neither a run (no manifest.json) nor a current/ dataset (no table parts); give out/<pipeline>/runs/<run id> or out/<pipeline>/current`,
      { context: { file: location } },
    );
  }
  const rows = await readCurrentTables(storage, partsOf);
  const newest = [...partsOf.values()]
    .flat()
    .map((p) => parsePartName(p.path.split('/').at(-1) ?? '')?.runId ?? '');
  const runId = newest.sort().at(-1) ?? '';
  const root = parentOf(location);
  const pipeline = root.replace(/\/+$/, '').split('/').at(-1) ?? '';
  return build('current', location, pipeline, runId, storage, rows, await runsLocator(root, s3), {
    hasReport: (await storage.read('report.html')) !== null,
  });
}

function build(
  kind: 'run' | 'current',
  location: string,
  pipeline: string,
  runId: string,
  storage: Storage,
  rows: Rows,
  locate: ViewData['locate'],
  extra: { hasReport: boolean },
): ViewData {
  const group = <T extends { response_id: string }>(list: T[], order: (a: T, b: T) => number) => {
    const map = new Map<string, T[]>();
    for (const row of list) {
      const rowsOf = map.get(row.response_id) ?? [];
      rowsOf.push(row);
      map.set(row.response_id, rowsOf);
    }
    for (const rowsOf of map.values()) rowsOf.sort(order);
    return map;
  };
  const responses = [...rows.responses].sort(
    (a, b) =>
      (a.response_number ?? Number.MAX_SAFE_INTEGER) - (b.response_number ?? Number.MAX_SAFE_INTEGER) ||
      a.created_at.localeCompare(b.created_at) ||
      a.response_id.localeCompare(b.response_id),
  );
  const responsesByStudy = new Map<string, Row<'responses'>[]>();
  for (const response of responses) {
    const list = responsesByStudy.get(response.study_id) ?? [];
    list.push(response);
    responsesByStudy.set(response.study_id, list);
  }
  return {
    kind,
    location,
    pipeline,
    runId,
    storage,
    ...extra,
    studies: [...rows.studies].sort((a, b) => a.link_id.localeCompare(b.link_id)),
    responses: new Map(responses.map((r) => [r.response_id, r])),
    responsesByStudy,
    answers: group(rows.answers, (a, b) => a.position - b.position),
    transcript: group(rows.transcript, (a, b) => a.turn - b.turn),
    attributes: group(rows.attributes, (a, b) => a.key.localeCompare(b.key)),
    media: group(rows.media, (a, b) => a.turn - b.turn || a.kind.localeCompare(b.kind)),
    locate,
  };
}

const viewedTables = ['studies', 'responses', 'answers', 'transcript', 'attributes', 'media'] as const;

async function readRunTables(storage: Storage, manifest: Manifest): Promise<Rows> {
  const rows = emptyRows();
  for (const table of viewedTables) {
    const parquet = manifest.files.find((file) => file.path === `${table}.parquet`);
    const csv = manifest.files.find((file) => file.path === `${table}.csv`);
    if (parquet) {
      for await (const group of readPart(storage, parquet.path, parquet.bytes, table))
        (rows[table] as Row<typeof table>[]).push(...group);
    } else if (csv) {
      (rows[table] as Row<typeof table>[]).push(...(await readCsv(storage, csv.path, table)));
    }
  }
  return rows;
}

function emptyRows(): Rows {
  return {
    studies: [],
    responses: [],
    questions: [],
    answers: [],
    transcript: [],
    attributes: [],
    media: [],
  };
}

/** A run written with CSV only: cells back to the declared types (an empty cell is null). */
async function readCsv<T extends TableName>(storage: Storage, path: string, table: T): Promise<Row<T>[]> {
  const text = ((await storage.read(path)) ?? Buffer.alloc(0)).toString('utf8').replace(/^\ufeff/, '');
  const parsed = Papa.parse<Record<string, string>>(text, { header: true, skipEmptyLines: true });
  return parsed.data.map((cells) => {
    const row: Record<string, unknown> = {};
    for (const column of tables[table].columns) {
      const cell = cells[column.name] ?? '';
      if (cell === '') row[column.name] = column.nullable ? null : '';
      else if (column.type === 'integer') row[column.name] = Number(cell);
      else if (column.type === 'boolean') row[column.name] = cell === 'true';
      else row[column.name] = cell;
    }
    return row as Row<T>;
  });
}

/** current/<table>/study_id=<id>/part-<run id>.parquet: the newest part of each partition. */
async function currentParts(storage: Storage): Promise<Map<TableName, { path: string; bytes: number }[]>> {
  const parts = new Map<TableName, { path: string; bytes: number }[]>();
  for (const table of viewedTables) {
    const byFolder = new Map<string, { name: string; bytes: number }[]>();
    for await (const file of storage.list(table)) {
      const [folder, name] = file.path.split('/');
      if (!folder || !name || !parsePartName(name)) continue;
      const list = byFolder.get(folder) ?? [];
      list.push({ name, bytes: file.bytes });
      byFolder.set(folder, list);
    }
    const chosen: { path: string; bytes: number }[] = [];
    for (const [folder, files] of byFolder) {
      const name = newestPart(files.map((f) => f.name));
      const file = files.find((f) => f.name === name);
      if (file) chosen.push({ path: `${table}/${folder}/${file.name}`, bytes: file.bytes });
    }
    if (chosen.length > 0) parts.set(table, chosen);
  }
  return parts;
}

async function readCurrentTables(
  storage: Storage,
  parts: Map<TableName, { path: string; bytes: number }[]>,
): Promise<Rows> {
  const rows = emptyRows();
  for (const [table, files] of parts) {
    for (const file of files) {
      for await (const group of readPart(storage, file.path, file.bytes, table))
        (rows[table] as Row<TableName>[]).push(...(group as Row<TableName>[]));
    }
  }
  return rows;
}

/** The pipeline's folder above current/. */
function parentOf(location: string): string {
  if (!isObjectStorage(location)) return dirname(resolve(location));
  return location.replace(/\/+$/, '').replace(/\/[^/]*$/, '');
}

/** For current/: the runs beside it, newest first, searched for the entry a media row names. */
async function runsLocator(root: string, s3: S3Settings): Promise<ViewData['locate']> {
  const pipeline = await openStorage(root, s3);
  const runIds = (await pipeline.listFolders('runs').catch(() => [] as string[]))
    .filter((id) => !id.startsWith('.'))
    .sort((a, b) => compareRunIds(b, a));
  const zips = new Map<string, Promise<ZipIndex | null>>();
  const zipOf = (runId: string) => {
    let zip = zips.get(runId);
    if (!zip) {
      const run = pipeline.at(`runs/${runId}`);
      zip = run
        .read(MANIFEST_FILE)
        .then((text) => {
          if (!text) return null;
          const manifest = JSON.parse(text.toString('utf8')) as Manifest;
          const file = manifest.files.find((f) => f.path === 'media.zip');
          return file ? ZipIndex.open(run, 'media.zip', file.bytes) : null;
        })
        .catch(() => null);
      zips.set(runId, zip);
    }
    return zip;
  };
  return async (row) => {
    if (row.status !== 'archived' || !row.file)
      return { reason: `the download failed: ${row.error ?? 'no reason given'}` };
    if (runIds.length === 0)
      return {
        reason: `current/ keeps no recordings of its own, and there is no runs/ folder beside it (${root}) whose media.zip holds them`,
      };
    for (const runId of runIds) {
      const zip = await zipOf(runId);
      const entry = zip?.entries.get(row.file);
      if (zip && entry && (row.bytes === null || entry.size === row.bytes)) return { zip, entry };
    }
    return { reason: `no run in ${root}/runs has ${row.file} in its media.zip` };
  };
}
