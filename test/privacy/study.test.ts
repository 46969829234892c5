import { describe, expect, it } from 'vitest';
import { PrivacyConfig } from '../../src/config/schema.ts';
import {
  type PrivacyProfile,
  pseudonymOf,
  StudyDeidentifier,
  termsPattern,
} from '../../src/privacy/index.ts';
import type { Row } from '../../src/tables/index.ts';

function profile(secret: string, overrides: Record<string, unknown> = {}): PrivacyProfile {
  const config = PrivacyConfig.parse({
    attributes: { 'utm_*': 'keep', panel_id: 'pseudonymise' },
    ...overrides,
  });
  return {
    config,
    secret: Buffer.from(secret),
    detectors: { detect: config.text.detect, terms: termsPattern(['Maria', 'Jonas Berg']), patterns: [] },
    terms: { file: 'privacy/terms.txt', count: 2 },
  };
}

const response = (id: string, summary: string): Row<'responses'> => ({
  response_id: id,
  study_id: 's1',
  link_id: 'l1',
  response_number: 1,
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: null,
  summary,
  short_transcript: '',
  answer_count: 1,
  turn_count: 1,
  modality: 'text',
  extra: '{"email":"x@y.org"}',
});
const answer = (responseId: string, text: string): Row<'answers'> => ({
  response_id: responseId,
  answer_id: 'a1',
  study_id: 's1',
  discussion_guide_question_id: 'q1',
  concept_id: null,
  question: 'Who?',
  answer: text,
  position: 1,
  extra: null,
});
const attribute = (responseId: string, key: string, value: string): Row<'attributes'> => ({
  response_id: responseId,
  key,
  study_id: 's1',
  value,
});

function deidentify(secret: string, order: 'forward' | 'backward') {
  const study = new StudyDeidentifier(profile(secret));
  const responses = [
    response('r1', 'Maria wrote maria@example.org'),
    response('r2', 'Jonas  Berg called MARIA'),
  ];
  const answers = [
    answer('r1', 'ask jonas berg at +49 30 1234567'),
    answer('r2', 'MARIA@example.org, maria'),
  ];
  const seen =
    order === 'forward' ? [responses, answers] : [answers.slice().reverse(), responses.slice().reverse()];
  for (const rows of seen) study.see(rows === responses ? 'responses' : 'answers', rows as never);
  study.see('attributes', [
    attribute('r1', 'utm_source', 'mail'),
    attribute('r1', 'panel_id', 'P-77'),
    attribute('r1', 'email', 'maria@example.org'),
  ]);
  return {
    study,
    responses: responses.map((r) => study.row('responses', r)),
    answers: answers.map((a) => study.row('answers', a)),
  };
}

describe('a study de-identified', () => {
  it('gives the same thing the same tag in every text, whatever order the texts are seen in', () => {
    const a = deidentify('secret', 'forward');
    const b = deidentify('secret', 'backward');
    expect(b.responses).toEqual(a.responses);
    expect(b.answers).toEqual(a.answers);
    const [r1, r2] = a.responses;
    const [a1, a2] = a.answers;
    const maria = /^(\[NAME-\d\]) wrote (\[EMAIL-\d\])$/.exec(r1?.summary ?? '');
    expect(maria).not.toBeNull();
    const [, name, email] = maria as RegExpExecArray;
    expect(r2?.summary).toMatch(new RegExp(`^(\\[NAME-\\d\\]) called ${literal(name as string)}$`));
    expect(a2?.answer).toBe(`${email}, ${name}`);
    expect(a1?.answer).toMatch(/^ask \[NAME-\d\] at \[PHONE-1\]$/);
    expect(r1?.extra).toBeNull();
    expect(a.study.counts().text).toMatchObject({ NAME: 5, EMAIL: 2, PHONE: 1 });
    expect(a.study.counts().distinct).toMatchObject({ NAME: 2, EMAIL: 1, PHONE: 1 });
  });

  it('tags thousands of texts alike in the second pass, seen or not, holding no whole text between the passes', () => {
    const study = new StudyDeidentifier(profile('secret'));
    const texts = Array.from({ length: 5000 }, (_, i) =>
      i % 7 === 0 ? `row ${i}: write to person${i % 3}@example.org` : `row ${i}: nothing to see`,
    );
    study.see(
      'answers',
      texts.map((text) => answer('r1', text)),
    );
    const tagged = texts.map((text) => study.tags.replace(text));
    for (const [i, text] of tagged.entries()) {
      if (i % 7 === 0) expect(text).toMatch(new RegExp(`^row ${i}: write to \\[EMAIL-[123]\\]$`));
      else expect(text).toBe(texts[i]);
    }
    expect(new Set(tagged.filter((_, i) => i % 7 === 0).map((t) => t.split(' ').at(-1))).size).toBe(3);
    // A text the first pass did not see is still searched, and what it holds tagged.
    expect(study.tags.replace('unseen: ring +44 20 7946 0958 or mail person0@example.org')).toMatch(
      /^unseen: ring \[PHONE-1\] or mail \[EMAIL-[123]\]$/,
    );
  });

  it('pseudonymises ids by the secret: the same id the same pseudonym, another secret another', () => {
    const a = deidentify('secret', 'forward');
    const b = deidentify('another', 'forward');
    const id = a.responses[0]?.response_id;
    expect(id).toBe(pseudonymOf(Buffer.from('secret'), { kind: 'response', id: 'r1' }));
    expect(id).toMatch(/^resp-[a-z2-7]{16}$/);
    expect(b.responses[0]?.response_id).not.toBe(id);
    expect(a.answers[0]?.response_id).toBe(id);
    expect(a.answers[0]?.answer_id).not.toBe('a1');
  });

  it('keeps, pseudonymises or drops URL parameters by their key, and links every pseudonym back', () => {
    const { study } = deidentify('secret', 'forward');
    const rows = [
      attribute('r1', 'utm_source', 'mail'),
      attribute('r1', 'panel_id', 'P-77'),
      attribute('r1', 'email', 'maria@example.org'),
    ].map((row) => study.row('attributes', row));
    expect(rows[0]?.value).toBe('mail');
    expect(rows[1]?.value).toMatch(/^attr-/);
    expect(rows[2]).toBeNull();
    expect(study.counts().attributes).toEqual({ kept: 1, dropped: 1, pseudonymised: 1 });
    const lines = [
      attribute('r1', 'utm_source', 'mail'),
      attribute('r1', 'panel_id', 'P-77'),
      attribute('r1', 'email', 'maria@example.org'),
    ].map((row) => study.attributeLinkage(row));
    // Only the pseudonymised attribute has a line: a kept value is in the package, a dropped one nowhere.
    expect(lines.map((line) => line?.key ?? null)).toEqual([null, 'panel_id', null]);
    const linkage = study.linkage(
      ['r2', 'r1'],
      lines.flatMap((line) => (line ? [line] : [])),
    );
    expect(linkage.map((entry) => entry.response_id)).toEqual(['r1', 'r2', 'r1']);
    expect(linkage).toContainEqual({
      kind: 'response',
      pseudonym: study.responseId('r2'),
      response_id: 'r2',
      key: null,
      value: null,
    });
    expect(linkage).toContainEqual({
      kind: 'attribute',
      pseudonym: rows[1]?.value,
      response_id: 'r1',
      key: 'panel_id',
      value: 'P-77',
    });
  });

  it('names media paths by the pseudonym', () => {
    const { study } = deidentify('secret', 'forward');
    const pseudonym = study.responseId('r1');
    expect(study.mediaPath('l1/r1/3-audio.mp3', 'r1')).toBe(`l1/${pseudonym}/3-audio.mp3`);
  });
});

function literal(text: string): string {
  return text.replace(/[[\]\\^$.*+?()]/g, '\\$&');
}
