/**
 * Rows of one response: its responses row, answers, transcript, attributes, media rows,
 * question candidates and wide row. Pure: payloads and media outcomes in, rows out.
 */
import {
  type Answer,
  declaredKeys,
  extraFields,
  type ListedResponse,
  type SingleResponse,
  type Study,
  type TranscriptRow,
} from '../api/resources.ts';
import { questionKey } from '../output/wide-rows.ts';
import type { MediaOutcome, WideRow } from '../records.ts';
import { redact } from '../redact.ts';
import { type Row, responseStatus } from '../tables/index.ts';
import type { QuestionCandidate } from './questions.ts';
import { extraJson, toIsoUtc } from './values.ts';

/** The answers key that holds the summary of the whole conversation, not an answer. */
export const summaryKey = 'Summary';

export interface ResponseInput {
  study: Study;
  listed: ListedResponse;
  /** The single-response payload; null when it could not be fetched (no transcript rows). */
  detail: SingleResponse | null;
  media: MediaOutcome[];
}

export interface ResponseRows {
  response: Row<'responses'>;
  answers: Row<'answers'>[];
  transcript: Row<'transcript'>[];
  attributes: Row<'attributes'>[];
  questions: QuestionCandidate[];
  media: Row<'media'>[];
  wide: WideRow;
}

/** One answer in the shape both sources (answers_array, answers object) reduce to. */
interface AnswerSource {
  answer_id: string;
  discussion_guide_question_id: string | null;
  concept_id: string | null;
  question: string;
  answer: string;
  extra: string | null;
  /** The question slot: the dgq id, or the answers key when the array is absent. */
  slotId: string;
}

export function responseRows(input: ResponseInput): ResponseRows {
  const { study, listed, detail } = input;
  const ids = { response_id: listed.id, study_id: study.id };
  const sources = answerSources(listed);
  const transcriptRows = detail?.transcript ?? [];

  const answers = sources.map(
    (a, i): Row<'answers'> => ({
      ...ids,
      answer_id: a.answer_id,
      discussion_guide_question_id: a.discussion_guide_question_id,
      concept_id: a.concept_id,
      question: a.question,
      answer: a.answer,
      position: i + 1,
      extra: a.extra,
    }),
  );
  const transcript = transcriptRows.map((row, i) => transcriptRow(ids, row, i + 1, input.media));
  const response: Row<'responses'> = {
    response_id: listed.id,
    study_id: study.id,
    link_id: study.link_id,
    response_number: listed.response_number ?? null,
    created_at: toIsoUtc(listed.created_at),
    updated_at: listed.updated_at === undefined ? null : toIsoUtc(listed.updated_at),
    summary: summaryOf(listed),
    short_transcript: listed.short_transcript,
    answer_count: answers.length,
    turn_count: transcript.length,
    modality: modalityOf(transcriptRows),
    extra: responseExtra(listed, detail),
  };

  return {
    response,
    answers,
    transcript,
    attributes: Object.entries(listed.attributes).map(([key, value]) => ({ ...ids, key, value })),
    questions: sources.map((a) => ({
      study_id: study.id,
      discussion_guide_question_id: a.slotId,
      concept_id: a.concept_id,
      question: a.question,
    })),
    media: input.media.map((outcome) => mediaRow(ids, outcome)),
    wide: wideRow(response, sources, listed.attributes),
  };
}

/** answers_array when present (the Summary excluded), else the answers object's keys. */
function answerSources(listed: ListedResponse): AnswerSource[] {
  if (listed.answers_array) {
    return listed.answers_array
      .filter((a) => a.answer_id !== summaryKey)
      .map((a: Answer) => ({
        answer_id: a.answer_id,
        discussion_guide_question_id: a.discussion_guide_question_id,
        concept_id: a.concept_id,
        question: a.question,
        answer: a.answer,
        // question_id is declared (deprecated), so it is neither a key nor an extra.
        extra: extraJson(extraFields(a, declaredKeys.answer)),
        slotId: a.discussion_guide_question_id,
      }));
  }
  return Object.entries(listed.answers)
    .filter(([key]) => key !== summaryKey)
    .map(([key, answer]) => ({
      answer_id: key,
      discussion_guide_question_id: null,
      concept_id: null,
      question: key,
      answer,
      extra: null,
      slotId: key,
    }));
}

function summaryOf(listed: ListedResponse): string | null {
  const fromObject = listed.answers[summaryKey];
  if (fromObject !== undefined) return fromObject;
  return listed.answers_array?.find((a) => a.answer_id === summaryKey)?.answer ?? null;
}

function modalityOf(rows: readonly TranscriptRow[]): 'audio' | 'video' | 'text' {
  if (rows.some((row) => row.audio !== null)) return 'audio';
  if (rows.some((row) => row.video !== null)) return 'video';
  return 'text';
}

/** Undeclared fields of the list item and of the detail payload, merged. */
function responseExtra(listed: ListedResponse, detail: SingleResponse | null): string | null {
  const fromList = extraFields(listed, declaredKeys.listedResponse);
  const fromDetail = detail ? extraFields(detail, declaredKeys.singleResponse) : null;
  if (!fromList && !fromDetail) return null;
  return extraJson({ ...fromDetail, ...fromList });
}

function transcriptRow(
  ids: { response_id: string; study_id: string },
  row: TranscriptRow,
  turn: number,
  media: readonly MediaOutcome[],
): Row<'transcript'> {
  return {
    response_id: ids.response_id,
    turn,
    study_id: ids.study_id,
    answer_id: row.answer_id,
    discussion_guide_question_id: row.discussion_guide_question_id,
    concept_id: row.concept_id,
    moderator: row.moderator,
    user: row.user,
    audio_file: archivedFile(media, turn, ['audio']),
    video_file: archivedFile(media, turn, ['video', 'hls']),
    // Whether the service had a recording, archived by this run or not (--no-media, a failure).
    has_audio: row.audio !== null,
    has_video: row.video !== null,
    extra: extraJson(extraFields(row, declaredKeys.transcriptRow)),
  };
}

/** The zip path of the first archived outcome of the turn, by kind preference; null when none. */
function archivedFile(
  media: readonly MediaOutcome[],
  turn: number,
  kinds: readonly MediaOutcome['kind'][],
): string | null {
  for (const kind of kinds) {
    const outcome = media.find((m) => m.turn === turn && m.kind === kind && m.status === 'archived');
    if (outcome?.file) return outcome.file;
  }
  return null;
}

function mediaRow(ids: { response_id: string; study_id: string }, outcome: MediaOutcome): Row<'media'> {
  return {
    response_id: ids.response_id,
    turn: outcome.turn,
    kind: outcome.kind,
    study_id: ids.study_id,
    answer_id: outcome.answer_id,
    file: outcome.file,
    content_type: outcome.content_type,
    bytes: outcome.bytes,
    sha256: outcome.sha256,
    status: outcome.status,
    // The media stage redacts already; this is the last line of defence for the tables.
    error: outcome.error === null ? null : redact(outcome.error),
  };
}

function wideRow(
  response: Row<'responses'>,
  sources: readonly AnswerSource[],
  attributes: Record<string, string>,
): WideRow {
  const cells: Record<string, string> = {};
  for (const a of sources) {
    const key = questionKey(a.slotId, a.concept_id);
    // Two answers to one slot should not happen; if they do, keep both texts.
    cells[key] = key in cells ? `${cells[key]}\n${a.answer}` : a.answer;
  }
  return {
    response_id: response.response_id,
    response_number: response.response_number,
    created_at: response.created_at,
    updated_at: response.updated_at,
    status: responseStatus(response.summary),
    modality: response.modality,
    summary: response.summary,
    cells,
    attributes,
  };
}
