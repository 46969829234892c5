/** Awkward values every writer must carry through unchanged (or escaped, for CSV formulas). */
import type { Row } from '../../src/tables/index.ts';

export const awkwardTexts = [
  'plain',
  'unicode: 日本語, Ελληνικά, emoji 😀, combining é',
  'multi\nline\r\nwith CRLF',
  'quotes "inside" and ""double""',
  'commas, everywhere,',
  '=1+1',
  '+x',
  '-x',
  '@x',
  '\tx',
  '\rx',
  '\0x',
  ' leading and trailing space ',
  'line\u2028separator',
  '',
];

export function answerRow(i: number, answer: string): Row<'answers'> {
  const general = i % 2 === 0;
  return {
    response_id: `r-${Math.floor(i / 10)}`,
    answer_id: `a-${i}`,
    study_id: 's-1',
    discussion_guide_question_id: general ? null : `dgq-${i % 7}`,
    concept_id: general ? null : `concept-${i % 3}`,
    question: `Question ${i % 7}?`,
    answer,
    position: (i % 10) + 1,
    extra: i % 3 === 0 ? JSON.stringify({ note: answer }) : null,
  };
}

export const awkwardAnswers = awkwardTexts.map((text, i) => answerRow(i, text));

export function responseRow(id: string, overrides: Partial<Row<'responses'>> = {}): Row<'responses'> {
  return {
    response_id: id,
    study_id: 's-1',
    link_id: 'coffee',
    response_number: 3,
    created_at: '2026-11-21T23:55:00.123Z',
    updated_at: null,
    summary: 'Summary "quoted"\n=1',
    short_transcript: '• Hi → hello',
    answer_count: 2,
    turn_count: 0,
    modality: 'text',
    extra: null,
    ...overrides,
  };
}

/** A transcript row of a text conversation: turn `turn` of a response, no recording. */
export function transcriptRow(
  responseId: string,
  turn: number,
  overrides: Partial<Row<'transcript'>> = {},
): Row<'transcript'> {
  return {
    response_id: responseId,
    turn,
    study_id: 's-1',
    answer_id: null,
    discussion_guide_question_id: 'intro',
    concept_id: null,
    moderator: 'hi',
    user: '',
    audio_file: null,
    video_file: null,
    has_audio: false,
    has_video: false,
    extra: null,
    ...overrides,
  };
}
