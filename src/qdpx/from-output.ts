/**
 * The writer's input from the one reader of an output (src/reader): a study's newest rows from
 * current/, and each recording where a run's media.zip holds it, opened as a stream only when
 * the package writer copies it.
 *
 * A turn's video is its MP4 when there is one; an HLS-only turn becomes one MPEG-TS file, its
 * segments joined in the playlist's order (TS segments play one after another as one file; a
 * QDA program cannot open a playlist). A recording no run archived is left out, with a warning
 * naming why.
 */

import { byResponse, type HandoffStudy, type Recording } from '../reader/index.ts';
import type { Row } from '../tables/index.ts';
import type { QdpxRecording, QdpxResponse, QdpxStudy, QdpxWarning } from './types.ts';

export async function qdpxInput(
  reader: HandoffStudy,
): Promise<{ input: QdpxStudy; warnings: QdpxWarning[] }> {
  const studyId = reader.study.study_id;
  const warnings: QdpxWarning[] = [];
  const [questions, responses, answers, transcript, attributes] = await Promise.all([
    reader.all('questions'),
    reader.all('responses'),
    reader.all('answers'),
    reader.all('transcript'),
    reader.all('attributes'),
  ]);
  const recordings = new Map<string, Recording[]>();
  for await (const list of reader.recordings()) {
    const first = list[0];
    if (first) recordings.set(first.response_id, list);
  }
  const answersOf = byResponse(answers);
  const turnsOf = byResponse(transcript);
  const attributesOf = byResponse(attributes);
  const items: QdpxResponse[] = [];
  for (const response of [...responses].sort(responseOrder)) {
    const id = response.response_id;
    items.push({
      response,
      answers: (answersOf.get(id) ?? []).sort((a, b) => a.position - b.position),
      transcript: (turnsOf.get(id) ?? []).sort((a, b) => a.turn - b.turn),
      attributes: (attributesOf.get(id) ?? []).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
      recordings: await recordingsOf(recordings.get(id) ?? [], (message) =>
        warnings.push({ study_id: studyId, response_id: id, message }),
      ),
    });
  }
  return {
    input: {
      study: reader.study,
      questions: [...questions].sort((a, b) => a.position - b.position),
      responses: items,
      privacy: reader.privacy,
    },
    warnings,
  };
}

/** The order cases and sources are listed in: response_number, then created_at, then id. */
function responseOrder(a: Row<'responses'>, b: Row<'responses'>): number {
  const number = (r: Row<'responses'>) => r.response_number ?? Number.MAX_SAFE_INTEGER;
  return (
    number(a) - number(b) ||
    (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0) ||
    (a.response_id < b.response_id ? -1 : a.response_id > b.response_id ? 1 : 0)
  );
}

/** One recording per turn and medium: audio, and the MP4 (else the HLS stream) of a video. */
async function recordingsOf(
  found: readonly Recording[],
  warn: (message: string) => void,
): Promise<QdpxRecording[]> {
  const out: QdpxRecording[] = [];
  for (const recording of found) {
    const { turn, kind } = recording;
    if (
      kind === 'hls' &&
      found.some((r) => r.turn === turn && r.kind === 'video' && !('reason' in r.located))
    )
      continue;
    if ('reason' in recording.located) {
      const other = found.some((r) => r.turn === turn && r.kind !== kind && !('reason' in r.located));
      if (!other) warn(`the ${kind} of turn ${turn} is not in the project: ${recording.located.reason}`);
      continue;
    }
    if (recording.note) warn(`the ${kind} of turn ${turn}: ${recording.note}`);
    const { zip, entry } = recording.located;
    if (kind === 'hls') {
      const segments = await zip.segments(entry);
      out.push({
        turn,
        kind: 'video',
        extension: 'ts',
        bytes: segments.reduce((sum, segment) => sum + segment.size, 0),
        open: async () =>
          (async function* () {
            for (const segment of segments) yield* await zip.open(segment);
          })(),
      });
      continue;
    }
    out.push({
      turn,
      kind: kind === 'audio' ? 'audio' : 'video',
      extension: entry.name.slice(entry.name.lastIndexOf('.') + 1),
      bytes: entry.size,
      open: () => zip.open(entry),
    });
  }
  return out;
}
