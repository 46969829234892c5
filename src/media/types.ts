/** What the media stage is asked to fetch, and a body on its way into media.zip. */
import type { StoredBody } from '../output/codecs/zip-writer.ts';
import type { MediaKind } from '../records.ts';

/** media.video: which of a video's recordings are fetched. */
export const videoModes = ['mp4', 'hls', 'both'] as const;
export type VideoMode = (typeof videoModes)[number];

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
/** A downloaded body: in memory or a temporary file, its CRC-32 when the hashing thread computed it. */
export type MediaBody = StoredBody;

/** One entry of media.zip as a job hands it to the writer. */
export interface ArchiveEntry {
  name: string;
  body: MediaBody;
  bytes: number;
}

/**
 * A job whose downloads are complete: the entries to append, and what the media table
 * says of it (for HLS, the rewritten playlist).
 */
export interface FetchedJob {
  /** The entry the media table points at. */
  file: string;
  contentType: string | null;
  bytes: number;
  sha256: string;
  entries: ArchiveEntry[];
}
