/**
 * Where the extract stage puts what is not a validated record: every payload as received
 * (raw/*.jsonl.gz), records that failed validation (rejects.jsonl) and warnings (manifest).
 * The pipeline owns the implementations; extract only writes to these interfaces.
 */
import type { Operation } from '../api/resources.ts';

export interface RawRecord {
  operation: Operation;
  /** link_id used in the request path, when the operation has one. */
  link_id?: string;
  study_id?: string;
  response_id?: string;
  page?: number;
  /** The request URL without its query string; query parameters are listed in `query`. */
  url: string;
  query?: Record<string, string>;
  status: number;
  received_at: string;
  payload: unknown;
}

export interface RawSink {
  write(record: RawRecord): void;
}

export interface Reject {
  stage: 'extract' | 'transform' | 'media';
  operation: Operation;
  study_id?: string;
  link_id?: string;
  response_id?: string;
  /** One line naming what was wrong and where, e.g. "transcript[3].audio: expected string". */
  reason: string;
  /** The record exactly as received (or the body text when it was not JSON). */
  raw: unknown;
  at: string;
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

export interface ExtractSinks {
  raw: RawSink;
  rejects: RejectSink;
  warn(warning: Warning): void;
}
