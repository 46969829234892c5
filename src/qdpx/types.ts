/**
 * What the REFI-QDA writer is fed: one study's newest rows (as the tables declare them) and a way
 * to open each recording's bytes. The writer is pure apart from the zip it writes: it never reads
 * an output itself (src/qdpx/from-output.ts builds this from the one reader of an output).
 */
import type { HandoffPrivacy } from '../privacy/index.ts';
import type { Row } from '../tables/index.ts';

/** One recording of a turn, as it goes into the project. */
export interface QdpxRecording {
  turn: number;
  /** audio, or video (an MP4, or an HLS stream's segments joined into one MPEG-TS file). */
  kind: 'audio' | 'video';
  /** File extension without the dot: mp3, mp4, ts… */
  extension: string;
  /** Size in bytes, known before the bytes are read (the zip header states it). */
  bytes: number;
  /** The bytes, in order, as a stream: never held whole. */
  open(): Promise<AsyncIterable<Uint8Array>>;
}

/** One response with everything the project shows of it. */
export interface QdpxResponse {
  response: Row<'responses'>;
  /** In position order. */
  answers: Row<'answers'>[];
  /** In turn order. */
  transcript: Row<'transcript'>[];
  attributes: Row<'attributes'>[];
  recordings: QdpxRecording[];
}

export interface QdpxStudy {
  study: Row<'studies'>;
  /** The discussion guide's question slots, in position order. */
  questions: Row<'questions'>[];
  /** Ordered as the project lists them (response_number, created_at, response_id). */
  responses: QdpxResponse[];
  /** How the project was made: identified, or de-identified by a privacy profile. */
  privacy: HandoffPrivacy;
}

/** Something the export could not carry as asked; the command prints each. */
export interface QdpxWarning {
  study_id: string;
  response_id?: string;
  message: string;
}
