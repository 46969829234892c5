/**
 * A conversation's page and text: turns in order with their question, recordings beside their
 * turn (missing ones with the reason), and every text from the service or a respondent escaped.
 */
import { describe, expect, it } from 'vitest';
import { type Conversation, conversationText } from '../../src/archive/conversation.ts';
import { conversationPage } from '../../src/archive/guide.ts';

const HOSTILE = '<img src=x onerror="alert(1)"> & </li><script>alert(2)</script>';

function conversation(): Conversation {
  const response = {
    response_id: 'r-1',
    study_id: 's-1',
    link_id: 'study',
    response_number: 7,
    created_at: '2026-11-21T23:55:00.000Z',
    updated_at: '2026-11-22T00:10:00.000Z',
    summary: `Summary ${HOSTILE}`,
    short_transcript: null,
    answer_count: 1,
    turn_count: 2,
    modality: 'audio',
    extra: null,
  } as unknown as Conversation['response'];
  const turn = (n: number, answer: string | null, user: string) =>
    ({
      response_id: 'r-1',
      turn: n,
      study_id: 's-1',
      answer_id: answer,
      moderator: `Q${n} ${HOSTILE}`,
      user,
    }) as unknown as Conversation['transcript'][number];
  return {
    response,
    name: 'r-1',
    transcript: [turn(1, null, 'hello'), turn(2, 'a-1', `I said ${HOSTILE}`)],
    answers: new Map([['a-1', { answer_id: 'a-1', position: 1, question: `Why ${HOSTILE}?` } as never]]),
    attributes: [{ key: 'utm"source', value: HOSTILE } as never],
    recordings: [
      { turn: 2, kind: 'audio', file: 'recordings/r-1/2-audio.mp3', copy: null, note: null },
      { turn: 2, kind: 'hls', file: 'recordings/r-1/2-hls.ts', copy: 'recordings/r-1/2-hls.mp4', note: null },
      { turn: 1, kind: 'audio', file: null, copy: null, note: `the download failed: ${HOSTILE}` },
    ],
  };
}

describe('a conversation in the bag', () => {
  it('escapes everything the respondent or the service wrote, and puts recordings at their turn', () => {
    const html = conversationPage(conversation(), `Title ${HOSTILE}`);
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<img');
    expect(html).toContain('&lt;img src=x onerror=&quot;alert(1)&quot;&gt;');
    const turns = html.split('<li class="turn"').slice(1);
    expect(turns.length).toBe(2);
    expect(turns[0]).toContain('Introduction');
    expect(turns[0]).toContain('not in this bag: the download failed');
    expect(turns[1]).toContain('Question 1: Why');
    expect(turns[1]).toContain('<audio controls preload="none" src="../recordings/r-1/2-audio.mp3"');
    // An MPEG-TS recording plays from its MP4 copy, and links to both files.
    expect(turns[1]).toContain('<video controls preload="none" src="../recordings/r-1/2-hls.mp4"');
    expect(turns[1]).toContain('<a href="../recordings/r-1/2-hls.ts">');
    expect(turns[1]).toContain('<a href="../recordings/r-1/2-hls.mp4">');
  });

  it('reads as plain text, turn by turn', () => {
    const text = conversationText(conversation(), 'Title');
    expect(text).toMatch(/^Response #7 of "Title"\n/);
    expect(text.indexOf('--- Turn 1, introduction')).toBeLessThan(text.indexOf('--- Turn 2, question 1:'));
    expect(text).toContain('Recording (audio): recordings/r-1/2-audio.mp3');
    expect(text).toContain(
      'Recording (hls): recordings/r-1/2-hls.ts, its copy as MP4: recordings/r-1/2-hls.mp4',
    );
    expect(text).toContain('Recording (audio) not in this bag: the download failed:');
  });
});
