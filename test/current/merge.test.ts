/**
 * The current dataset's merge rules: a study's rows published by one run, the next run's
 * merged with them through current/'s door (staged, prepared, published, settled), and the
 * study's rows read back from the newest parts.
 */
import { describe, expect, it } from 'vitest';
import type { Row, TableRows } from '../../src/tables/index.ts';
import { currentOutputIn, currentStudyRows, publishStudyRun } from '../helpers/current-runs.ts';
import { withTempDir } from '../helpers/environment.ts';
import { transcriptRow } from '../helpers/samples.ts';

const study = 'st-1';

function response(id: string, updated_at: string | null, summary = `summary of ${id}`): Row<'responses'> {
  return {
    response_id: id,
    study_id: study,
    link_id: 'cars',
    response_number: null,
    created_at: '2030-01-01T00:00:00.000Z',
    updated_at,
    summary,
    short_transcript: '',
    answer_count: 0,
    turn_count: 0,
    modality: 'text',
    extra: null,
  };
}
const answer = (response_id: string, answer_id: string, text: string): Row<'answers'> => ({
  response_id,
  answer_id,
  study_id: study,
  discussion_guide_question_id: `q-${answer_id}`,
  concept_id: null,
  question: `question ${answer_id}`,
  answer: text,
  position: 1,
  extra: null,
});
const turn = (response_id: string, n: number, user: string) =>
  transcriptRow(response_id, n, { study_id: study, user });
const attribute = (response_id: string, key: string, value: string): Row<'attributes'> => ({
  response_id,
  key,
  study_id: study,
  value,
});
const question = (id: string, position: number, text = `question ${id}`): Row<'questions'> => ({
  study_id: study,
  discussion_guide_question_id: id,
  concept_id: null,
  question: text,
  position,
});
const studyRow = (link_id: string): Row<'studies'> => ({
  study_id: study,
  link_id,
  title: 'Cars',
  created_at: '2030-01-01T00:00:00.000Z',
  desc: 'Cars (2 Responses)',
  listed_response_count: 2,
  extra: null,
});

const empty = (): TableRows => ({
  studies: [],
  responses: [],
  questions: [],
  answers: [],
  transcript: [],
  attributes: [],
  media: [],
});
const rows = (partial: Partial<TableRows>): TableRows => ({ ...empty(), ...partial });

const previous = rows({
  studies: [studyRow('cars')],
  responses: [response('r1', '2030-01-01T10:00:00.000Z'), response('r2', '2030-01-01T10:00:00.000Z')],
  questions: [question('a', 1), question('b', 2)],
  answers: [answer('r1', 'a', 'old r1 a'), answer('r1', 'b', 'old r1 b'), answer('r2', 'a', 'r2 a')],
  transcript: [turn('r1', 1, 'old 1'), turn('r1', 2, 'old 2'), turn('r1', 3, 'old 3'), turn('r2', 1, 'r2 1')],
  attributes: [attribute('r1', 'utm', 'mail'), attribute('r2', 'utm', 'web')],
});

interface MergeOptions {
  /** A full, lossless export: the run's rows are the whole study. */
  replace: boolean;
  /** Responses of the run whose detail could not be fetched. */
  incomplete?: string[];
  /** Responses the service no longer lists. */
  removed?: ReadonlySet<string>;
}
const incremental: MergeOptions = { replace: false };

/** `before` published by a first run, then each of `runs` merged with it in turn. */
async function mergedRuns(before: TableRows, runs: TableRows[], options: MergeOptions): Promise<TableRows> {
  return withTempDir(async (dir) => {
    const output = currentOutputIn(dir);
    await publishStudyRun(output, { runId: '20300101T000000Z', studyId: study, rows: before });
    for (const [index, incoming] of runs.entries()) {
      await publishStudyRun(output, {
        runId: `20300102T00000${index}Z`,
        studyId: study,
        rows: incoming,
        since: options.replace ? null : '2030-01-01T00:00:00.000Z',
        incomplete: options.incomplete,
        removed: options.removed,
      });
    }
    return currentStudyRows(output, study);
  });
}

const mergeStudy = (before: TableRows, incoming: TableRows, options: MergeOptions) =>
  mergedRuns(before, [incoming], options);

describe('a study merged into current/', () => {
  it('a response the service no longer lists (removed) leaves every table; one the run fetched stays', async () => {
    const incoming = rows({ responses: [response('r2', '2030-01-02T10:00:00.000Z', 'r2 again')] });
    const merged = await mergeStudy(previous, incoming, { ...incremental, removed: new Set(['r1', 'r2']) });
    expect(merged.responses.map((r) => [r.response_id, r.summary])).toEqual([['r2', 'r2 again']]);
    for (const table of ['answers', 'transcript', 'attributes', 'media'] as const) {
      expect(
        merged[table].filter((row) => row.response_id === 'r1'),
        table,
      ).toEqual([]);
    }
    expect(merged.questions).toEqual(previous.questions);
    expect(merged.studies).toEqual(previous.studies);
    // Without it, an incremental merge keeps what the run did not fetch.
    expect((await mergeStudy(previous, incoming, incremental)).responses.map((r) => r.response_id)).toEqual([
      'r1',
      'r2',
    ]);
  });

  it('a re-exported response replaces its row and ALL its child rows; rows it lost disappear', async () => {
    const incoming = rows({
      studies: [studyRow('cars-renamed')],
      responses: [response('r1', '2030-01-02T10:00:00.000Z', 'new summary')],
      questions: [question('a', 1)],
      answers: [answer('r1', 'a', 'new r1 a')],
      transcript: [turn('r1', 1, 'new 1')],
    });
    const merged = await mergeStudy(previous, incoming, incremental);
    expect(merged.studies.map((s) => s.link_id)).toEqual(['cars-renamed']);
    expect(merged.responses.map((r) => [r.response_id, r.summary])).toEqual([
      ['r2', 'summary of r2'],
      ['r1', 'new summary'],
    ]);
    expect(merged.answers.map((a) => a.answer)).toEqual(['r2 a', 'new r1 a']);
    expect(merged.transcript.map((t) => t.user)).toEqual(['r2 1', 'new 1']);
    // r1's new copy has no URL parameters: its old one is gone, r2's stays.
    expect(merged.attributes).toEqual([attribute('r2', 'utm', 'web')]);
    expect(merged.questions).toEqual(previous.questions);
  });

  it('adds new responses and keeps those the run did not see', async () => {
    const incoming = rows({
      responses: [response('r3', '2030-01-02T00:00:00.000Z')],
      answers: [answer('r3', 'c', 'r3 c')],
      questions: [question('c', 1)],
    });
    const merged = await mergeStudy(previous, incoming, incremental);
    expect(merged.responses.map((r) => r.response_id)).toEqual(['r1', 'r2', 'r3']);
    expect(merged.answers.map((a) => a.answer)).toEqual(['old r1 a', 'old r1 b', 'r2 a', 'r3 c']);
    expect(merged.studies).toEqual(previous.studies);
    expect(merged.questions.map((q) => [q.discussion_guide_question_id, q.position])).toEqual([
      ['a', 1],
      ['b', 2],
      ['c', 3],
    ]);
  });

  it('the later-fetched copy wins even when re-stamped earlier, with all its child rows', async () => {
    // The previous copy says 2030-01-01T10:00; the service corrected the stamp to 1970.
    const incoming = rows({
      responses: [response('r1', '1970-01-01T00:00:00.000Z', 'corrected')],
      answers: [answer('r1', 'a', 'corrected a')],
    });
    const merged = await mergeStudy(previous, incoming, incremental);
    expect(merged.responses.map((r) => [r.response_id, r.summary, r.updated_at])).toEqual([
      ['r2', 'summary of r2', previous.responses[1]!.updated_at],
      ['r1', 'corrected', '1970-01-01T00:00:00.000Z'],
    ]);
    expect(merged.answers.map((a) => a.answer)).toEqual(['r2 a', 'corrected a']);
    expect(merged.transcript.filter((t) => t.response_id === 'r1')).toEqual([]);
  });

  it('an incomplete copy (no detail) never replaces a previous one; a new incomplete response goes in', async () => {
    const incoming = rows({
      responses: [response('r1', '2030-02-01T00:00:00.000Z', 'no detail'), response('r9', null)],
      answers: [answer('r1', 'a', 'partial'), answer('r9', 'a', 'r9 a')],
    });
    const merged = await mergeStudy(previous, incoming, { replace: false, incomplete: ['r1', 'r9'] });
    expect(merged.responses.map((r) => [r.response_id, r.summary])).toEqual([
      ['r1', 'summary of r1'],
      ['r2', 'summary of r2'],
      ['r9', 'summary of r9'],
    ]);
    expect(merged.transcript).toEqual(previous.transcript);
    expect(merged.answers.map((a) => a.answer)).toEqual(['old r1 a', 'old r1 b', 'r2 a', 'r9 a']);
  });

  it('replace: the run is the whole study (deleted responses go), but an incomplete copy keeps its old one', async () => {
    const incoming = rows({
      studies: [studyRow('cars')],
      responses: [response('r1', '2030-01-01T10:00:00.000Z'), response('r3', null)],
      questions: [question('c', 1), question('a', 2)],
      answers: [answer('r3', 'c', 'r3 c'), answer('r1', 'a', 'r1 partial')],
    });
    const merged = await mergeStudy(previous, incoming, { replace: true, incomplete: ['r1'] });
    expect(merged.responses.map((r) => r.response_id)).toEqual(['r1', 'r3']);
    expect(merged.answers.map((a) => a.answer)).toEqual(['old r1 a', 'old r1 b', 'r3 c']);
    expect(merged.transcript.map((t) => t.user)).toEqual(['old 1', 'old 2', 'old 3']);
    expect(merged.attributes).toEqual([attribute('r1', 'utm', 'mail')]);
    expect(merged.questions).toEqual(incoming.questions);
  });

  it('merging the same run twice changes nothing (a rerun after a kill)', async () => {
    const incoming = rows({
      responses: [response('r1', '2030-01-02T10:00:00.000Z', 'new'), response('r4', null)],
      answers: [answer('r1', 'a', 'new a'), answer('r4', 'a', 'r4 a')],
      transcript: [turn('r4', 1, 'r4 1')],
      questions: [question('z', 1)],
    });
    const once = await mergeStudy(previous, incoming, incremental);
    const twice = await mergedRuns(previous, [incoming, incoming], incremental);
    expect(twice).toEqual(once);
  });
});

describe('question slots merged into current/', () => {
  it('keep first-seen text and position, numbers new slots after the previous ones', async () => {
    const merged = await mergeStudy(
      rows({ studies: [studyRow('cars')], questions: [question('a', 1, 'first text'), question('b', 2)] }),
      rows({
        studies: [studyRow('cars')],
        questions: [question('c', 1), question('a', 2, 'changed text'), question('d', 3)],
      }),
      incremental,
    );
    expect(merged.questions.map((q) => [q.discussion_guide_question_id, q.question, q.position])).toEqual([
      ['a', 'first text', 1],
      ['b', 'question b', 2],
      ['c', 'question c', 3],
      ['d', 'question d', 4],
    ]);
  });
});
