/** A current/ part written by a version before a column existed reads back with that column empty. */
import { describe, expect, it } from 'vitest';
import { rowOf } from '../../src/output/formats/parquet-read.ts';

describe('rowOf', () => {
  it('leaves has_audio / has_video empty (not false) for a transcript row from an older part', () => {
    const older = {
      response_id: 'r-1',
      turn: 2n,
      study_id: 's',
      answer_id: 'a-1',
      discussion_guide_question_id: 'dg-1',
      concept_id: null,
      moderator: 'Why?',
      user: 'Because',
      audio_file: null,
      video_file: null,
      extra: null,
    };
    const row = rowOf('transcript', older);
    expect(row).toMatchObject({ turn: 2, has_audio: null, has_video: null });
    expect(rowOf('transcript', { ...older, has_audio: true, has_video: false })).toMatchObject({
      has_audio: true,
      has_video: false,
    });
  });
});
