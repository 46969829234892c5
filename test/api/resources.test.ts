/** The declared resources accept what the spec allows and name what it does not. */
import { describe, expect, it } from 'vitest';
import {
  describeIssues,
  ListedResponse,
  responseCountInDesc,
  SingleResponse,
  Study,
} from '../../src/api/resources.ts';

const listed = {
  id: 'r1',
  response_number: 1,
  created_at: '2026-01-02T03:04:05Z',
  updated_at: '2026-01-03T03:04:05Z',
  answers: { Summary: 's', Q1: 'a' },
  answers_array: [
    {
      answer_id: 'a1',
      discussion_guide_question_id: 'd1',
      concept_id: null,
      question_id: 'q1',
      question: 'Q1',
      answer: 'a',
    },
  ],
  attributes: { id: 'x' },
  short_transcript: '• Hi → hello',
};

const row = {
  moderator: 'Hi',
  user: '',
  discussion_guide_question_id: 'intro',
  concept_id: null,
  answer_id: null,
  audio: null,
  video: null,
};

describe('resources', () => {
  it('list items may lack response_number and updated_at, as the spec sample shows', () => {
    const { response_number, updated_at, ...sample } = listed;
    expect(ListedResponse.safeParse(sample).success).toBe(true);
  });

  it('concept_id, answer_id, audio and video may be null; video is an object when present', () => {
    expect(SingleResponse.safeParse({ id: 'r1', survey: 'l', transcript: [row] }).success).toBe(true);
    const video = { ...row, video: { stream_url: 'https://s/x.m3u8', mp4_url: 'https://s/x.mp4' } };
    expect(SingleResponse.safeParse({ id: 'r1', survey: 'l', transcript: [video] }).success).toBe(true);
    const wrong = { ...row, video: 'https://s/x.mp4' };
    const result = SingleResponse.safeParse({ id: 'r1', survey: 'l', transcript: [row, wrong] });
    expect(result.success).toBe(false);
    expect(describeIssues(result.error!)).toMatch(/^transcript\[1\]\.video: /);
  });

  it('keeps fields the service adds beyond the spec', () => {
    const parsed = Study.parse({
      id: 'u',
      link_id: 'l',
      title: 't',
      created_at: '2026-01-01T00:00:00+02:00',
      desc: 't (3 Responses)',
      owner: 'new field',
    });
    expect(parsed).toMatchObject({ owner: 'new field' });
    expect(ListedResponse.parse({ ...listed, language: 'fi' })).toMatchObject({ language: 'fi' });
  });

  it('names missing fields and wrong types with their path', () => {
    const result = ListedResponse.safeParse({ ...listed, created_at: 'yesterday', attributes: { id: 3 } });
    const message = describeIssues(result.error!);
    expect(message).toContain('created_at: expected an ISO 8601 timestamp');
    expect(message).toContain('attributes.id:');
  });

  it('reads the response count from desc only when desc has the documented shape', () => {
    expect(responseCountInDesc('Snack test (25 Responses)')).toBe(25);
    expect(responseCountInDesc('Pilot (1 Response)')).toBe(1);
    expect(responseCountInDesc('Odd (many Responses)')).toBeNull();
    expect(responseCountInDesc('No count')).toBeNull();
  });
});
