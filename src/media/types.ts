/** What the media stage is asked to fetch and what it reports back, per transcript row. */

/** audio: the audio URL; video: the MP4; hls: the HLS playlist with its segments. */
export type MediaKind = 'audio' | 'video' | 'hls';

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

/**
 * A downloaded file on its way into media.zip: small files stay in memory (no temporary
 * file written and read back), larger ones, or any once the memory budget is spent, are
 * in a temporary file.
 */
export type MediaBody = { kind: 'memory'; data: Buffer } | { kind: 'file'; path: string };
