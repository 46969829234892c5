/**
 * The records the stages hand each other, declared once so that no stage imports another's
 * internals: payloads as received (raw/), records that failed validation (rejects.jsonl),
 * warnings (manifest), what the media stage reports per transcript row (transform's input)
 * and a wide sheet's row (transform's output, load's input).
 */
import type { Operation, ReceivedJson } from './api/resources.ts';

/** Which request a record came from; what is unknown is left out. */
export interface RecordOrigin {
  /** link_id used in the request path, when the operation has one. */
  link_id?: string;
  study_id?: string;
  response_id?: string;
  page?: number;
}

export interface RawRecord extends RecordOrigin {
  operation: Operation;
  /** The request URL without its query string; query parameters are listed in `query`. */
  url: string;
  query?: Record<string, string>;
  status: number;
  received_at: string;
  payload: unknown;
}

/** What a client call returns that raw/ keeps (structurally the API client's Fetched). */
export interface ReceivedPayload {
  url: string;
  query?: Record<string, string>;
  status: number;
  receivedAt: string;
  payload: unknown;
  /** The body as received and the value parsed from it, when the client has them. */
  json?: ReceivedJson;
}

/**
 * Archives a response as received: its raw record, with the body's bytes when they are still
 * exactly the record's payload (not replaced, for example by its JSON text when it nests too
 * deep), so raw/ can store them instead of writing the payload out again.
 */
export function archiveRaw(
  sink: RawSink,
  operation: Operation,
  received: ReceivedPayload,
  origin: RecordOrigin = {},
): void {
  const { json } = received;
  const bytes = json !== undefined && json.of === received.payload ? json.bytes : undefined;
  sink.write(rawRecord(operation, received, origin), bytes);
}

/** The one place a raw record is built from a response as received. */
function rawRecord(operation: Operation, received: ReceivedPayload, origin: RecordOrigin = {}): RawRecord {
  return {
    operation,
    ...origin,
    url: received.url,
    ...(received.query === undefined ? {} : { query: received.query }),
    status: received.status,
    received_at: received.receivedAt,
    payload: received.payload,
  };
}

export interface RawSink {
  /** `json`: the payload's bytes as received (archiveRaw), which may be stored as they are. */
  write(record: RawRecord, json?: Uint8Array): void;
  /**
   * Resolves once the sink can take more (a sink that queues its writes, as raw/ does); the
   * extract stage waits on it once a page and once a response, so a source faster than the
   * writing does not pile records up in memory.
   */
  drained?(): Promise<void>;
}

export interface Reject extends Omit<RecordOrigin, 'page'> {
  /** Only extract validates records today; kept in rejects.jsonl so a later stage can add its own. */
  stage: 'extract';
  operation: Operation;
  /** One line naming what was wrong and where, e.g. "transcript[3].audio: expected string". */
  reason: string;
  /** The record exactly as received (or the body text when it was not JSON). */
  raw: unknown;
  at: string;
}

/** The one place a reject is built. */
export function rejectRecord(
  operation: Operation,
  reason: string,
  raw: unknown,
  origin: Omit<RecordOrigin, 'page'> = {},
): Reject {
  return { stage: 'extract', operation, ...origin, reason, raw, at: new Date().toISOString() };
}

export interface RejectSink {
  write(reject: Reject): void;
}

export interface Warning {
  code: string;
  message: string;
  study_id?: string;
  link_id?: string;
}

/** Where extract puts what is not a validated record; the pipeline owns the implementations. */
export interface ExtractSinks {
  raw: RawSink;
  rejects: RejectSink;
  warn(warning: Warning): void;
}

/** audio: the audio URL; video: the MP4; hls: the HLS playlist with its segments. */
export type MediaKind = 'audio' | 'video' | 'hls';

/** What became of one recording of a transcript row. */
export interface MediaOutcome {
  turn: number;
  kind: MediaKind;
  answer_id: string | null;
  /** Path inside media.zip; null when the download failed. */
  file: string | null;
  content_type: string | null;
  bytes: number | null;
  sha256: string | null;
  status: 'archived' | 'failed';
  error: string | null;
}

/** One response's row of its study's wide sheet. */
export interface WideRow {
  response_id: string;
  response_number: number | null;
  created_at: string;
  updated_at: string | null;
  /** responseStatus(summary), src/tables/index.ts. */
  status: 'complete' | 'in progress';
  modality: string | null;
  summary: string | null;
  /** Answer text per question slot, keyed by questionKey(dgq id, concept id). */
  cells: Record<string, string>;
  /** The response's attributes (URL parameters), by key. */
  attributes: Record<string, string>;
}

/** A column of the wide sheet after its fixed ones: a question slot's, or an attribute key's. */
export interface WideColumn {
  /** questionKey() of a question slot; the attribute's key. */
  key: string;
  header: string;
  of: 'question' | 'attribute';
}

/** A row's value in a question or attribute column; null when it has none. */
export function wideValue(row: WideRow, column: WideColumn): string | null {
  const values = column.of === 'attribute' ? row.attributes : row.cells;
  // Own keys only: a respondent's key may be "constructor" or "__proto__".
  return Object.hasOwn(values, column.key) ? (values[column.key] ?? null) : null;
}
