/**
 * The writer's pure parts: UUID v5 against RFC 9562's example, code-point positions after
 * astral characters (checked by Python slicing the same text), line ends, the code book's
 * names, and what XML cannot carry.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { xmlAttr, xmlText } from '../../src/output/codecs/escape.ts';
import { codeBook } from '../../src/qdpx/codebook.ts';
import { codePoints, conversationText, sourceText } from '../../src/qdpx/conversation.ts';
import { guidOf, uuidV5 } from '../../src/qdpx/guids.ts';
import type { QdpxResponse } from '../../src/qdpx/types.ts';
import { fileSafeName, UniqueNames } from '../../src/qdpx/xml.ts';
import type { Row } from '../../src/tables/index.ts';
import { transcriptRow } from '../helpers/samples.ts';

const response = (overrides: Partial<QdpxResponse> = {}): QdpxResponse => ({
  response: {
    response_id: 'r1',
    study_id: 's1',
    link_id: 'l1',
    response_number: 1,
    created_at: '2025-03-04T10:00:00.000Z',
    updated_at: null,
    summary: 'Liked it 👍',
    short_transcript: '',
    answer_count: 2,
    turn_count: 4,
    modality: 'text',
    extra: null,
  } as Row<'responses'>,
  answers: [],
  transcript: [],
  attributes: [],
  recordings: [],
  ...overrides,
});

const answer = (answer_id: string, text: string, position: number): Row<'answers'> =>
  ({
    response_id: 'r1',
    answer_id,
    study_id: 's1',
    discussion_guide_question_id: `dg-${position}`,
    concept_id: null,
    question: `Question ${position}?`,
    answer: text,
    position,
    extra: null,
  }) as Row<'answers'>;

const turn = (n: number, answer_id: string | null, moderator: string, user: string) =>
  transcriptRow('r1', n, { study_id: 's1', answer_id, discussion_guide_question_id: 'x', moderator, user });

/** Python's text[start:end] for each passage: what QualCoder's importer cuts. */
function pythonSlices(text: string, spans: { start: number; end: number }[]): string[] {
  const script =
    'import json,sys\nd=json.load(sys.stdin)\nprint(json.dumps([d["t"][a:b] for a,b in d["s"]]))';
  const out = execFileSync('python3', ['-c', script], {
    input: JSON.stringify({ t: text, s: spans.map((s) => [s.start, s.end]) }),
  });
  return JSON.parse(out.toString('utf8')) as string[];
}

describe('qdpx parts', () => {
  it('makes RFC 9562 UUID v5s, the same for the same ids', () => {
    const dns = Buffer.from('6ba7b8109dad11d180b400c04fd430c8', 'hex');
    expect(uuidV5('www.example.com', dns)).toBe('2ed6657d-e927-568b-95e1-2665a8aea6a2');
    expect(guidOf('case', 's1', 'r1')).toBe(guidOf('case', 's1', 'r1'));
    expect(guidOf('case', 's1', 'r1')).not.toBe(guidOf('case', 's1', 'r2'));
    expect(guidOf('selection', 's', 'r', 'a', 1)).not.toBe(guidOf('selection', 's', 'r', 'a', null));
  });

  it('places passages by code points, past emoji, RTL text and CRLF, as Python slices them', () => {
    const replies = ['👩‍👩‍👧‍👦 family 🇯🇵', 'التطبيق رائع', 'Line one\r\nLine two', '=SUM(A1:A9)'];
    const item = response({
      answers: [
        answer('a1', `${replies[0]}\n${replies[1]}`, 1),
        answer('a2', replies[2] as string, 2),
        answer('a3', replies[3] as string, 3),
      ],
      transcript: [
        turn(1, null, 'Hi 😀', 'Hi 👋'),
        turn(2, 'a1', 'Q1?', replies[0] as string),
        turn(3, 'a1', 'Why?', replies[1] as string),
        turn(4, 'a2', 'Q2?', replies[2] as string),
        turn(5, 'a3', 'Q3?', 'not what the service recorded'),
      ],
    });
    const { text, passages } = conversationText(item, 'Study 📋: Respondent 1', (a) => `Q${a.position}`);
    expect(text).not.toContain('\r');
    expect(codePoints(text)).toBe([...text].length);
    const cut = pythonSlices(text, passages);
    expect(passages.map((p) => [p.answer?.answer_id ?? 'summary', p.turn])).toEqual([
      ['a1', 2],
      ['a1', 3],
      ['a2', 4],
      ['a3', null],
      ['summary', null],
    ]);
    expect(cut).toEqual([replies[0], replies[1], 'Line one\nLine two', replies[3], 'Liked it 👍']);
    // A JavaScript slice by the same numbers would be off after the first emoji.
    expect(text.slice(passages[0]?.start, passages[0]?.end)).not.toBe(replies[0]);
  });

  it('makes lone surrogates one replacement character', () => {
    expect(sourceText('a\ud800b\udc00c\r')).toBe('a\ufffdb\ufffdc\n');
    expect(codePoints('a😀b')).toBe(3);
  });

  it('names codes uniquely, groups concepts, and adds slots the questions table lacks', () => {
    const q = (position: number, dg: string, concept: string | null): Row<'questions'> => ({
      study_id: 's1',
      discussion_guide_question_id: dg,
      concept_id: concept,
      question: 'Same text\nfor all?',
      position,
    });
    const book = codeBook('s1', [q(1, 'dg-1', null), q(2, 'dg-3', 'concept-a'), q(3, 'dg-3', 'concept-b')]);
    const a = { ...answer('x', 'y', 1), discussion_guide_question_id: 'dg-3', concept_id: 'concept-b' };
    expect(book.codeOf(a).name).toBe('Q3 Same text for all?');
    const unknown = { ...answer('x', 'y', 1), discussion_guide_question_id: 'dg-9', question: 'New?' };
    expect(book.codeOf(unknown).name).toBe('Q4 New?');
    const xml = book.xml();
    expect(xml.match(/name="Concept A" isCodable="false">.*?<Code [^>]*name="Q2 /)).not.toBeNull();
    expect(xml).toContain('name="Summary"');
    // Two ids that one name would fit keep their ids: code names stay unique.
    const twins = codeBook('s1', [q(1, 'dg-3', 'concept-a'), q(2, 'dg-3', 'concept_A')]).xml();
    const groups = [...twins.matchAll(/name="(Concept [^"]*)" isCodable="false"/g)].map((m) => m[1]);
    expect(groups).toEqual(['Concept concept-a', 'Concept concept_A']);
  });

  it('keeps XML and file names safe', () => {
    expect(xmlText('a\u0000b<&>\r')).toBe('ab&lt;&amp;&gt;&#13;');
    expect(xmlAttr('"\t\n\uffff')).toBe('&quot;&#9;&#10;');
    expect(fileSafeName('../a/b:c\n', 'x')).toBe('_a_b_c');
    const names = new UniqueNames();
    expect([names.claim('A', '.mp3'), names.claim('a', '.mp3'), names.claim('A.mp3', '.txt')]).toEqual([
      'A.mp3',
      'a (2).mp3',
      'A.mp3.txt',
    ]);
  });
});
