/**
 * The comparison of a study's schema between two runs, on payloads built here: each kind of
 * change found, nothing found where nothing changed, and what a run that saw few records must
 * not conclude.
 */
import { describe, expect, it } from 'vitest';
import { compareSchema, isGone } from '../../src/drift/compare.ts';
import { SchemaObserver } from '../../src/drift/observe.ts';
import { MAX_NAMES, type SchemaChange, StudySchema } from '../../src/drift/schema.ts';

const study = { study_id: 'study-1', link_id: 'cars' };

interface Options {
  createdAt?: string;
  questions?: [string, string | null, string][];
  attributes?: Record<string, string>;
  extra?: Record<string, unknown>;
  rowExtra?: Record<string, unknown>;
}

const guide: [string, string | null, string][] = [
  ['dg-1', null, 'What comes to mind?'],
  ['dg-2', 'concept-a', 'What do you like about it?'],
];

/** A list item and its detail, as the service sends them. */
function response(index: number, options: Options = {}) {
  const questions = options.questions ?? guide;
  const listed = {
    id: `r-${index}`,
    response_number: index,
    created_at: options.createdAt ?? `2025-03-${String(10 + (index % 10)).padStart(2, '0')}T10:00:00Z`,
    answers: { Summary: 'fine' },
    answers_array: questions.map(([dgq, concept, question], q) => ({
      answer_id: `a-${index}-${q}`,
      discussion_guide_question_id: dgq,
      concept_id: concept,
      question_id: `q-${q}`,
      question,
      answer: 'yes',
    })),
    attributes: options.attributes ?? { id: `p-${index}`, utm_source: 'mail' },
    short_transcript: '• Hi → hello',
    ...options.extra,
  };
  const detail = {
    id: `r-${index}`,
    survey: 'cars',
    transcript: questions.map(([dgq, concept, question], q) => ({
      moderator: question,
      user: 'yes',
      discussion_guide_question_id: dgq,
      concept_id: concept,
      answer_id: `a-${index}-${q}`,
      audio: null,
      video: null,
      ...options.rowExtra,
    })),
  };
  return { listed, detail };
}

type Payloads = { listed: Record<string, unknown>; detail: Record<string, unknown> }[];

function observe(responses: Payloads, studyExtra: Record<string, unknown> = {}) {
  const observer = new SchemaObserver();
  observer.study({
    id: 'study-1',
    link_id: 'cars',
    title: 'Cars',
    created_at: '2025-03-01T00:00:00Z',
    desc: 'Cars (3 Responses)',
    ...studyExtra,
  });
  for (const { listed, detail } of responses) observer.response(listed, detail);
  return observer;
}

function many(count: number, options: Options = {}, from = 1) {
  return Array.from({ length: count }, (_, i) => response(from + i, options));
}

/** The schema recorded by a first run of `responses`, as the state stores and reads it. */
function recorded(
  responses: ReturnType<typeof response>[],
  studyExtra: Record<string, unknown> = {},
): StudySchema {
  const first = compareSchema(study, undefined, observe(responses, studyExtra));
  expect(first.changes).toEqual([]);
  return StudySchema.parse(JSON.parse(JSON.stringify(first.next)));
}

const kinds = (changes: SchemaChange[]) => changes.map((change) => change.kind);

describe('compareSchema', () => {
  it('records a first run and reports nothing; the same payloads again report nothing', () => {
    const previous = recorded(many(5));
    expect(previous.records).toMatchObject({
      study: 1,
      response: 5,
      answer: 10,
      detail: 5,
      transcript_row: 10,
    });
    expect(previous.fields.response?.id).toEqual({ seen: 5, of: 5, missed: 0, types: ['string'] });
    expect(previous.questions.map((q) => q.question)).toEqual([
      'What comes to mind?',
      'What do you like about it?',
    ]);
    expect(previous.attributes).toEqual({
      id: { seen: 5, of: 5, missed: 0 },
      utm_source: { seen: 5, of: 5, missed: 0 },
    });
    expect(compareSchema(study, previous, observe(many(5, {}, 6))).changes).toEqual([]);
    // No value is kept: only names, types and counts.
    expect(JSON.stringify(previous)).not.toMatch(/p-1|mail|yes/);
  });

  it('finds a question slot added, with its text and slot', () => {
    const previous = recorded(many(5));
    const added: [string, string | null, string][] = [...guide, ['dg-3', 'concept-b', 'Would you buy it?']];
    const { changes } = compareSchema(study, previous, observe([response(9, { questions: added })]));
    expect(changes).toEqual([
      {
        ...study,
        kind: 'question_added',
        message:
          'question added: "Would you buy it?" (discussion guide question "dg-3", concept "concept-b")',
        discussion_guide_question_id: 'dg-3',
        concept_id: 'concept-b',
        question: 'Would you buy it?',
      },
      { ...study, kind: 'concept_added', message: 'concept added: "concept-b"', concept_id: 'concept-b' },
    ]);
  });

  it('finds a question reworded by a newer response, with the old and the new text; an older one rewords nothing', () => {
    const previous = recorded(many(5, { createdAt: '2025-03-10T10:00:00Z' }));
    const reworded: [string, string | null, string][] = [
      ['dg-1', null, 'What first comes to mind?'],
      guide[1]!,
    ];
    const newer = compareSchema(
      study,
      previous,
      observe([response(9, { questions: reworded, createdAt: '2025-04-01T00:00:00Z' })]),
    );
    expect(newer.changes).toEqual([
      {
        ...study,
        kind: 'question_reworded',
        message:
          'question reworded (discussion guide question "dg-1"): "What comes to mind?" → "What first comes to mind?"',
        discussion_guide_question_id: 'dg-1',
        concept_id: null,
        question: 'What first comes to mind?',
        previous_question: 'What comes to mind?',
      },
    ]);
    expect(newer.next.questions[0]?.question).toBe('What first comes to mind?');
    // An old response updated since, still carrying the text it was asked with.
    const older = compareSchema(
      study,
      newer.next,
      observe([response(2, { createdAt: '2025-03-10T10:00:00Z' })]),
    );
    expect(older.changes).toEqual([]);
    expect(older.next.questions[0]?.question).toBe('What first comes to mind?');
  });

  it('finds a question slot gone once responses that always had it come without it', () => {
    const previous = recorded(many(5));
    const { changes, next } = compareSchema(
      study,
      previous,
      observe([response(9, { questions: [guide[0]!] })]),
    );
    expect(kinds(changes)).toEqual(['question_gone']);
    expect(changes[0]).toMatchObject({
      discussion_guide_question_id: 'dg-2',
      question: 'What do you like about it?',
    });
    expect(next.questions).toHaveLength(1);
  });

  it('finds a question slot gone from the newest responses though older ones of the run still have it', () => {
    const previous = recorded(many(5));
    const older = many(3, {}, 6);
    const newer = response(9, { questions: [guide[0]!] });
    expect(kinds(compareSchema(study, previous, observe([...older, newer])).changes)).toEqual([
      'question_gone',
    ]);
    // Absent from one response in the middle of the run only: not gone.
    const middle = compareSchema(study, previous, observe([older[0]!, newer, older[1]!]));
    expect(middle.changes).toEqual([]);
    expect(middle.next.questions[1]).toMatchObject({ seen: 7, of: 8, missed: 0 });
  });

  it('finds URL parameters new and gone, and does not call an occasional one gone after a few responses', () => {
    const previous = recorded([
      ...many(9),
      response(10, { attributes: { id: 'p-10', utm_source: 'mail', lang: 'ja' } }),
    ]);
    const { changes, next } = compareSchema(
      study,
      previous,
      observe(many(2, { attributes: { id: 'x', campaign: 'spring' } }, 11)),
    );
    expect(changes).toEqual([
      {
        ...study,
        kind: 'url_parameter_added',
        message: 'URL parameter added: "campaign"',
        parameter: 'campaign',
      },
      {
        ...study,
        kind: 'url_parameter_gone',
        message: 'URL parameter gone: "utm_source"',
        parameter: 'utm_source',
      },
    ]);
    // lang: in 1 of 10 responses, missed in 2: still expected, carried on.
    expect(next.attributes.lang).toEqual({ seen: 1, of: 10, missed: 2 });
  });

  it('finds fields the spec does not name added and gone, at each place, and their type changed', () => {
    const previous = recorded(many(4, { extra: { score: 3 } }));
    const now = observe(many(2, { extra: { score: '3', channel: 'web' }, rowExtra: { sentiment: 0.4 } }, 5), {
      archived: false,
    });
    const { changes } = compareSchema(study, previous, now);
    expect(changes.map((c) => [c.kind, c.place, c.field, c.types, c.previous_types])).toEqual([
      ['field_added', 'study', 'archived', ['boolean'], undefined],
      ['field_type_changed', 'response', 'score', ['string'], ['number']],
      ['field_added', 'response', 'channel', ['string'], undefined],
      ['field_added', 'transcript_row', 'sentiment', ['number'], undefined],
    ]);
    expect(changes[1]?.message).toBe(
      'field "score" of the response (list item) changed type: number → string',
    );
    // score was in all 6 responses, sentiment in all 4 rows since it came: gone at once; channel
    // was seen in 2 records only, too few to call it gone: carried on, its misses counted.
    const then = compareSchema(study, previous, now).next;
    const gone = compareSchema(study, then, observe(many(5, {}, 8)));
    expect(gone.changes.map((c) => [c.kind, c.place, c.field])).toEqual([
      ['field_gone', 'response', 'score'],
      ['field_gone', 'transcript_row', 'sentiment'],
    ]);
    expect(gone.next.fields.response?.channel).toEqual({ seen: 2, of: 2, missed: 5, types: ['string'] });
  });

  it('reports nothing of the spec’s own fields coming and going, nor of null alone', () => {
    const previous = recorded(many(5, { rowExtra: { note: 'x' } }));
    const bare = many(3, { rowExtra: { note: null } }, 6).map(({ listed, detail }) => {
      const { response_number: _number, ...rest } = listed;
      const answers = rest.answers_array.map(({ question_id: _id, ...answer }) => answer);
      return { listed: { ...rest, answers_array: answers }, detail };
    });
    const { changes, next } = compareSchema(study, previous, observe(bare));
    expect(changes).toEqual([]);
    // Absent from these 3, but an optional field of the spec's: forgotten, never reported.
    expect(next.fields.response?.response_number).toBeUndefined();
    expect(next.fields.transcript_row?.note?.types).toEqual(['null', 'string']);
  });

  it('says nothing of places this run saw no record of: a run with no responses finds nothing gone', () => {
    const previous = recorded(many(5, { extra: { score: 1 } }));
    const { changes, next } = compareSchema(study, previous, observe([]));
    expect(changes).toEqual([]);
    expect(next.fields.response).toEqual(previous.fields.response);
    expect(next.questions).toEqual(previous.questions);
  });

  it('judges no additions in a list past its limit of names', () => {
    const keys = (n: number, from: number) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${from + i}`, 'v']));
    const previous = recorded([response(1, { attributes: keys(MAX_NAMES + 5, 0) })]);
    expect(previous.saturated).toEqual(['attributes']);
    const { changes } = compareSchema(study, previous, observe([response(2, { attributes: keys(3, 1000) })]));
    expect(changes).toEqual([]);
  });
});

describe('isGone', () => {
  it('is gone at the first miss after at least 3 records that all had it', () => {
    expect(isGone({ seen: 3, of: 3, missed: 1 })).toBe(true);
    expect(isGone({ seen: 3, of: 3, missed: 0 })).toBe(false);
  });

  it('waits for enough misses when it was seen now and then; one seen fewer than 5 times never is', () => {
    expect(isGone({ seen: 10, of: 20, missed: 12 })).toBe(false);
    expect(isGone({ seen: 10, of: 20, missed: 14 })).toBe(true);
    expect(isGone({ seen: 9, of: 10, missed: 45 })).toBe(true);
    expect(isGone({ seen: 1, of: 1, missed: 100 })).toBe(false);
    expect(isGone({ seen: 3, of: 30, missed: 1000 })).toBe(false);
  });
});
