import { describe, expect, it } from 'vitest';
import { questionKey, wideColumns } from '../../src/output/wide-rows.ts';
import { QuestionRegistry, responseRows, studyRow } from '../../src/transform/index.ts';
import { detail, listed, outcome, signed, study, turn } from '../helpers/fixtures.ts';

describe('studyRow', () => {
  it('normalises created_at to UTC and parses the listed response count', () => {
    const row = studyRow(study);
    expect(row.created_at).toBe('2026-11-01T08:00:00.000Z');
    expect(row.listed_response_count).toBe(42);
    expect(row.extra).toBeNull();
  });

  it('leaves the count null when desc has another shape, and keeps unknown fields in extra', () => {
    const row = studyRow({ ...study, desc: 'A free text description', owner: 'team-x' });
    expect(row.listed_response_count).toBeNull();
    expect(JSON.parse(row.extra!)).toEqual({ owner: 'team-x' });
  });
});

describe('responseRows', () => {
  const base = { study, media: [] };

  it('puts the Summary key in responses.summary, never in answers', () => {
    const rows = responseRows({ ...base, listed: listed(), detail: null });
    expect(rows.response.summary).toBe('Likes coffee.');
    expect(rows.answers.map((a) => a.answer_id)).toEqual(['a-1', 'a-2']);
    expect(rows.answers.some((a) => a.question === 'Summary' || a.answer === 'Likes coffee.')).toBe(false);
    expect(rows.response.answer_count).toBe(2);
  });

  it('numbers answers from 1, keeps concept_id null, and never keys on the deprecated question_id', () => {
    const rows = responseRows({ ...base, listed: listed(), detail: null });
    expect(rows.answers[0]).toMatchObject({
      position: 1,
      concept_id: null,
      discussion_guide_question_id: 'dgq-1',
    });
    expect(rows.answers[1]).toMatchObject({ position: 2, concept_id: 'concept-A' });
    const text = JSON.stringify(rows);
    expect(text).not.toContain('q-deprecated');
    expect(rows.questions.map((q) => q.discussion_guide_question_id)).toEqual(['dgq-1', 'dgq-2']);
  });

  it('derives answers from the answers object when answers_array is absent', () => {
    const { answers_array: _, ...withoutArray } = listed();
    const rows = responseRows({ ...base, listed: withoutArray, detail: null });
    expect(rows.answers).toEqual([
      {
        response_id: 'r-1',
        answer_id: 'How often?',
        study_id: study.id,
        discussion_guide_question_id: null,
        concept_id: null,
        question: 'How often?',
        answer: 'Daily',
        position: 1,
        extra: null,
      },
      expect.objectContaining({ answer_id: 'Which brand?', position: 2 }),
    ]);
    expect(rows.response.summary).toBe('Likes coffee.');
    expect(rows.wide.cells[questionKey('How often?', null)]).toBe('Daily');
  });

  it('writes one attributes row per parameter, id and beyond', () => {
    const rows = responseRows({ ...base, listed: listed(), detail: null });
    expect(rows.attributes).toEqual([
      { response_id: 'r-1', key: 'id', study_id: study.id, value: 'panel-17' },
      { response_id: 'r-1', key: 'source', study_id: study.id, value: 'newsletter' },
      { response_id: 'r-1', key: 'utm_campaign', study_id: study.id, value: 'fall' },
    ]);
  });

  it('normalises timestamps and keeps missing response_number and updated_at as null', () => {
    const { response_number: _n, updated_at: _u, ...bare } = listed();
    const rows = responseRows({ ...base, listed: bare, detail: null });
    expect(rows.response.created_at).toBe('2026-11-21T23:55:00.000Z');
    expect(rows.response.response_number).toBeNull();
    expect(rows.response.updated_at).toBeNull();
    const full = responseRows({ ...base, listed: listed(), detail: null });
    expect(full.response.updated_at).toBe('2026-11-22T00:00:00.000Z');
  });

  it('has no transcript rows and turn_count 0 when the detail is missing', () => {
    const rows = responseRows({ ...base, listed: listed(), detail: null });
    expect(rows.transcript).toEqual([]);
    expect(rows.response.turn_count).toBe(0);
    expect(rows.response.modality).toBe('text');
  });

  it('numbers transcript turns from 1 and keeps intro rows with a null answer_id', () => {
    const transcript = [
      turn({ moderator: 'Welcome!', user: '', answer_id: null, discussion_guide_question_id: 'intro' }),
      turn(),
    ];
    const rows = responseRows({ ...base, listed: listed(), detail: detail(transcript) });
    expect(rows.transcript.map((t) => [t.turn, t.answer_id])).toEqual([
      [1, null],
      [2, 'a-1'],
    ]);
    expect(rows.response.turn_count).toBe(2);
    expect(rows.response.modality).toBe('text');
  });

  it('maps archived media to audio_file and never writes a signed URL anywhere', () => {
    const transcript = [turn({ answer_id: null }), turn({ audio: signed('a/2.mp3') })];
    const media = [
      outcome(),
      outcome({ turn: 1, file: null, status: 'failed', error: `HTTP 403 for ${signed('a/1.mp3')}` }),
    ];
    const rows = responseRows({
      study,
      listed: listed({ thumbnail: signed('thumb.png') }),
      detail: detail(transcript),
      media,
    });
    expect(rows.transcript.map((t) => [t.audio_file, t.video_file])).toEqual([
      [null, null],
      ['coffee-habits/r-1/2-audio.mp3', null],
    ]);
    expect(rows.response.modality).toBe('audio');
    expect(rows.media).toHaveLength(2);
    expect(rows.media[1]).toMatchObject({ turn: 1, status: 'failed', file: null, response_id: 'r-1' });
    const text = JSON.stringify(rows);
    expect(text).not.toContain('X-Signature');
    expect(text).not.toContain('Expires=');
    expect(text).not.toMatch(/https?:\/\/[^"\s]*\?/);
    expect(JSON.parse(rows.response.extra!)).toEqual({ thumbnail: 'https://storage.example.test/thumb.png' });
  });

  it('prefers the MP4 over HLS for video_file and falls back to HLS', () => {
    const video = { stream_url: signed('v.m3u8'), mp4_url: signed('v.mp4') };
    const transcript = [turn({ video }), turn({ video })];
    const media = [
      outcome({ turn: 1, kind: 'hls', file: 'x/r-1/1-hls/index.m3u8' }),
      outcome({ turn: 1, kind: 'video', file: 'x/r-1/1-video.mp4' }),
      outcome({ turn: 2, kind: 'video', file: null, status: 'failed', error: 'timeout' }),
      outcome({ turn: 2, kind: 'hls', file: 'x/r-1/2-hls/index.m3u8' }),
    ];
    const rows = responseRows({ study, listed: listed(), detail: detail(transcript), media });
    expect(rows.transcript.map((t) => t.video_file)).toEqual(['x/r-1/1-video.mp4', 'x/r-1/2-hls/index.m3u8']);
    expect(rows.transcript.every((t) => t.audio_file === null)).toBe(true);
    expect(rows.response.modality).toBe('video');
  });

  it('keeps undeclared transcript fields in extra', () => {
    const rows = responseRows({
      ...base,
      listed: listed(),
      detail: detail([turn({ sentiment: 'positive' })]),
    });
    expect(JSON.parse(rows.transcript[0]!.extra!)).toEqual({ sentiment: 'positive' });
  });

  it('fills the wide row by question slot', () => {
    const rows = responseRows({ ...base, listed: listed(), detail: null });
    expect(rows.wide).toEqual({
      response_id: 'r-1',
      response_number: 7,
      created_at: '2026-11-21T23:55:00.000Z',
      updated_at: '2026-11-22T00:00:00.000Z',
      status: 'complete',
      modality: 'text',
      summary: 'Likes coffee.',
      cells: { [questionKey('dgq-1', null)]: 'Daily', [questionKey('dgq-2', 'concept-A')]: 'Any' },
      attributes: { id: 'panel-17', source: 'newsletter', utm_campaign: 'fall' },
    });
  });
});

describe('QuestionRegistry', () => {
  it('returns only new slots, numbered by first appearance, keyed by dgq id and concept', () => {
    const registry = new QuestionRegistry();
    const q = (dgq: string, concept: string | null, question = 'Q') => ({
      study_id: 's',
      discussion_guide_question_id: dgq,
      concept_id: concept,
      question,
    });
    expect(registry.add([q('d1', null, 'first'), q('d2', 'c1')]).map((r) => r.position)).toEqual([1, 2]);
    const added = registry.add([q('d1', null, 'changed text'), q('d2', 'c2'), q('d2', 'c1')]);
    expect(added).toEqual([
      { study_id: 's', discussion_guide_question_id: 'd2', concept_id: 'c2', question: 'Q', position: 3 },
    ]);
    expect(registry.all().map((r) => r.question)).toEqual(['first', 'Q', 'Q']);
  });
});

describe('wideColumns', () => {
  const slot = (position: number, dgq: string, concept: string | null, question: string) => ({
    study_id: 's',
    discussion_guide_question_id: dgq,
    concept_id: concept,
    question,
    position,
  });

  it('gives two questions with the same text distinct, stable headers, in position order', () => {
    const questions = [
      slot(3, 'd2', null, 'Other'),
      slot(1, 'd1', 'concept-A', 'What do you think?'),
      slot(2, 'd1', 'concept-B', 'What do you think?'),
    ];
    const columns = wideColumns(questions);
    expect(columns).toEqual([
      { key: questionKey('d1', 'concept-A'), header: 'What do you think? [d1 / concept-A]', of: 'question' },
      { key: questionKey('d1', 'concept-B'), header: 'What do you think? [d1 / concept-B]', of: 'question' },
      { key: questionKey('d2', null), header: 'Other', of: 'question' },
    ]);
    expect(wideColumns([...questions].reverse())).toEqual(columns);
  });

  it('never reuses a fixed column name or a header already taken', () => {
    const columns = wideColumns([
      slot(1, 'd1', null, 'summary'),
      slot(2, 'd2', null, 'Same'),
      slot(3, 'd3', null, 'Same'),
      slot(4, 'd4', null, 'Same [d2]'),
    ]);
    const headers = columns.map((c) => c.header);
    expect(headers).toEqual(['summary [d1]', 'Same [d2]', 'Same [d3]', 'Same [d2] [d4]']);
    expect(new Set(headers).size).toBe(headers.length);
  });
});
