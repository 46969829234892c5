/** What the media stage is asked to fetch, and a body on its way into media.zip. */
import type { MediaKind } from '../records.ts';

export interface MediaJob {
  study_id: string;
  link_id: string;
  response_id: string;
  /** 1-based position of the transcript row. */
  turn: number;
  answer_id: string | null;
  kind: MediaKind;
  /** Signed URL; never logged or written with its query string. */
  url: string;
}

/**
 * A downloaded file on its way into media.zip: small files stay in memory (no temporary
 * file written and read back), larger ones, or any once the memory budget is spent, are
 * in a temporary file.
 */
export type MediaBody = { kind: 'memory'; data: Buffer } | { kind: 'file'; path: string };
