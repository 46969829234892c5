/** Which files one response asks the media stage to fetch. */
import type { SingleResponse, TranscriptRow } from '../api/resources.ts';
import type { MediaKind } from '../records.ts';
import type { MediaJob, VideoMode } from './types.ts';

export interface ResponseContext {
  study_id: string;
  link_id: string;
  response_id: string;
}

/** The kinds a video row yields for each `media.video` setting. */
const videoKinds: Record<VideoMode, MediaKind[]> = {
  mp4: ['video'],
  hls: ['hls'],
  both: ['video', 'hls'],
};

/** The URL of `kind` on a transcript row, or null when the row has none. */
export function mediaUrl(row: TranscriptRow | undefined, kind: MediaKind): string | null {
  if (!row) return null;
  if (kind === 'audio') return row.audio;
  if (kind === 'video') return row.video?.mp4_url ?? null;
  return row.video?.stream_url ?? null;
}

function rowKinds(row: TranscriptRow, video: VideoMode): MediaKind[] {
  const kinds: MediaKind[] = [];
  if (row.audio) kinds.push('audio');
  if (row.video) kinds.push(...videoKinds[video]);
  return kinds;
}

/** One job per file, in transcript order; turn is the 1-based transcript index. */
export function mediaJobs(ctx: ResponseContext, detail: SingleResponse, video: VideoMode): MediaJob[] {
  const jobs: MediaJob[] = [];
  detail.transcript.forEach((row, index) => {
    for (const kind of rowKinds(row, video)) {
      const url = mediaUrl(row, kind);
      if (!url) continue;
      jobs.push({
        study_id: ctx.study_id,
        link_id: ctx.link_id,
        response_id: ctx.response_id,
        turn: index + 1,
        answer_id: row.answer_id,
        kind,
        url,
      });
    }
  });
  return jobs;
}
