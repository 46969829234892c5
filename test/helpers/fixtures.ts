/** Small payloads for transform tests, shaped like the service's (spec sections 2.1 to 2.5). */
import type { ListedResponse, SingleResponse, Study, TranscriptRow } from '../../src/api/resources.ts';
import type { MediaOutcome } from '../../src/records.ts';

export const study: Study = {
  id: '5f0c1a2b-0000-4000-8000-000000000001',
  link_id: 'coffee-habits',
  title: 'Coffee habits',
  created_at: '2026-11-01T10:00:00+02:00',
  desc: 'Coffee habits (42 Responses)',
};

export const signed = (path: string) =>
  `https://storage.example.test/${path}?X-Signature=abc123&Expires=1767225600`;

export function listed(overrides: Partial<ListedResponse> = {}): ListedResponse {
  return {
    id: 'r-1',
    response_number: 7,
    created_at: '2026-11-21T23:55:00Z',
    updated_at: '2026-11-22T01:00:00+01:00',
    answers: { Summary: 'Likes coffee.', 'How often?': 'Daily', 'Which brand?': 'Any' },
    answers_array: [
      {
        answer_id: 'a-1',
        discussion_guide_question_id: 'dgq-1',
        concept_id: null,
        question_id: 'q-deprecated-1',
        question: 'How often?',
        answer: 'Daily',
      },
      {
        answer_id: 'a-2',
        discussion_guide_question_id: 'dgq-2',
        concept_id: 'concept-A',
        question_id: 'q-deprecated-2',
        question: 'Which brand?',
        answer: 'Any',
      },
    ],
    attributes: { id: 'panel-17', source: 'newsletter', utm_campaign: 'fall' },
    short_transcript: '• Hi → hello\n• How often? → Daily',
    ...overrides,
  };
}

export function turn(overrides: Partial<TranscriptRow> = {}): TranscriptRow {
  return {
    moderator: 'How often?',
    user: 'Daily',
    discussion_guide_question_id: 'dgq-1',
    concept_id: null,
    answer_id: 'a-1',
    audio: null,
    video: null,
    ...overrides,
  };
}

export function detail(transcript: TranscriptRow[]): SingleResponse {
  return { id: 'r-1', survey: study.link_id, transcript };
}

export function outcome(overrides: Partial<MediaOutcome> = {}): MediaOutcome {
  return {
    turn: 2,
    kind: 'audio',
    answer_id: 'a-1',
    file: 'coffee-habits/r-1/2-audio.mp3',
    content_type: 'audio/mpeg',
    bytes: 1234,
    sha256: 'ab'.repeat(32),
    status: 'archived',
    error: null,
    ...overrides,
  };
}
