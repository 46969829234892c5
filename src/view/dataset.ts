/**
 * What the viewer shows, read once from a run (a folder or s3://…/runs/<id>) or from a
 * pipeline's current/ dataset: the tables, grouped by response, and where each recording's
 * bytes are. Everything is read through the output reader (src/reader); nothing is written.
 *
 * A run's recordings are in its own media.zip. current/ has none: the reader finds each in
 * the media.zip of the run beside it that archived it.
 */
import { dirname, resolve } from 'node:path';
import { RunError } from '../errors.ts';
import { REPORT_FILE } from '../output/layout.ts';
import {
  byResponse,
  CURRENT_REPORT,
  type Located,
  OutputReader,
  openRun,
  RecordingFinder,
} from '../reader/index.ts';
import { isObjectStorage, openStorage, type S3Settings } from '../storage/index.ts';
import type { Storage } from '../storage/types.ts';
import type { DataTableName, Row, TableName } from '../tables/index.ts';

export type { Located } from '../reader/index.ts';

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

type Rows = { [T in DataTableName]: Row<T>[] };

export async function openViewData(location: string, s3: S3Settings = {}): Promise<ViewData> {
  const storage = await openStorage(location, s3);
  // A missing manifest reads as null; any other failure (credentials, a bucket) is the user's to see.
  const run = await openRun(storage);
  if (run) {
    const rows = await readTables((table) => run.rows(table));
    const finder = new RecordingFinder([run], storage.location, true);
    return build('run', location, run.manifest.pipeline, run.id, storage, rows, (row) => finder.locate(row), {
      hasReport: run.file(REPORT_FILE) !== undefined,
    });
  }
  const output = await OutputReader.open(parentOf(location), s3);
  if ((await output.current.parts('studies')).length === 0) {
    throw new RunError(
      `${location}: neither a run (no manifest.json) nor a current/ dataset (no table parts); give out/<pipeline>/runs/<run id> or out/<pipeline>/current`,
      { context: { file: location } },
    );
  }
  const rows = await readTables((table) => output.current.rows(table));
  const finder = await output.recordingFinder();
  const runId = (await output.current.newestRunId()) ?? '';
  return build('current', location, output.name, runId, storage, rows, (row) => finder.locate(row), {
    hasReport: (await output.storage.read(CURRENT_REPORT)) !== null,
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
    const map = byResponse(list);
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

async function readTables(rowsOf: <T extends TableName>(table: T) => AsyncIterable<Row<T>[]>): Promise<Rows> {
  const rows: Rows = {
    studies: [],
    responses: [],
    questions: [],
    answers: [],
    transcript: [],
    attributes: [],
    media: [],
  };
  for (const table of viewedTables) {
    for await (const group of rowsOf(table))
      (rows[table] as Row<TableName>[]).push(...(group as Row<TableName>[]));
  }
  return rows;
}

/** The pipeline's folder above current/. */
function parentOf(location: string): string {
  if (!isObjectStorage(location)) return dirname(resolve(location));
  return location.replace(/\/+$/, '').replace(/\/[^/]*$/, '');
}
