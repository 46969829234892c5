/**
 * A conversation as a person reads it with no software but a browser or a text editor: its
 * facts (ids, times, attributes, summary), then each turn in order, the question it answers,
 * what the moderator and the respondent said, and the recordings of the turn: players in HTML,
 * file names in text, or why a recording is not in the bag. Every text from the service or a
 * respondent is escaped; the pages hold no script and fetch nothing.
 */

import { escapeHtml as e } from '../output/codecs/escape.ts';
import type { Row } from '../tables/index.ts';

/** A recording of a turn as the bag holds it: its path under data/, or why it is missing. */
export interface TurnRecording {
  turn: number;
  kind: string;
  /** Path relative to data/ ("recordings/…"); null when the bag does not hold it. */
  file: string | null;
  /** A copy browsers play of an MPEG-TS file, relative to data/; null when there is none. */
  copy: string | null;
  /** Why it is missing, or a note on the copy included. */
  note: string | null;
}

export interface Conversation {
  response: Row<'responses'>;
  transcript: readonly Row<'transcript'>[];
  answers: ReadonlyMap<string, Row<'answers'>>;
  attributes: readonly Row<'attributes'>[];
  recordings: readonly TurnRecording[];
  /** Its pages' names under data/conversations/, without extension. */
  name: string;
}

export const pageStyle = `body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:60rem;padding:1rem 1.5rem;line-height:1.45;color:#111}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem}dt{font-weight:600}dd{margin:0}
.said{white-space:pre-wrap}.who{font-weight:600;margin-right:.4rem}.question{font-style:italic;color:#333}
.turn{margin:.6rem 0;padding:.4rem .6rem;border-left:3px solid #999}.note{font-size:.9rem;color:#633}
audio,video{display:block;max-width:100%;margin:.3rem 0}video{max-height:18rem}section.conversation{border-top:2px solid #333;margin-top:1.5rem}`;

/** No script, nothing fetched but the bag's own recordings. */
export const pageCsp = "default-src 'none'; style-src 'unsafe-inline'; media-src 'self' file:";

export function htmlPage(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${pageCsp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(title)}</title><style>${pageStyle}</style></head>
<body>
${body}
</body></html>
`;
}

export function conversationTitle(response: Row<'responses'>): string {
  return `Response ${response.response_number === null ? response.response_id : `#${response.response_number}`}`;
}

/**
 * The conversation's facts and turns as HTML, its recordings' paths relative to the page
 * (`toData`: the way from the page to data/, "" or "../").
 */
export function conversationHtml(conversation: Conversation, toData: string): string {
  const { response, attributes } = conversation;
  const facts = `<dl class="meta"><dt>Response id</dt><dd>${e(response.response_id)}</dd>
<dt>Created</dt><dd>${e(response.created_at)} UTC</dd>
<dt>Updated</dt><dd>${e(response.updated_at ?? '—')} UTC</dd>
<dt>Modality</dt><dd>${e(response.modality)}</dd>
<dt>Status</dt><dd>${response.summary ? 'complete' : 'in progress (no summary yet)'}</dd>
${attributes.length ? `<dt>Attributes</dt><dd>${attributes.map((a) => `${e(a.key)} = ${e(a.value)}`).join('<br>')}</dd>` : ''}
${response.summary ? `<dt>Summary</dt><dd class="said">${e(response.summary)}</dd>` : ''}</dl>`;
  const turns = conversation.transcript.map((turn) => turnHtml(conversation, turn, toData));
  return `${facts}\n<ol class="dialogue">\n${turns.join('\n')}\n</ol>`;
}

function turnHtml(conversation: Conversation, turn: Row<'transcript'>, toData: string): string {
  const answer = turn.answer_id ? conversation.answers.get(turn.answer_id) : undefined;
  const question = answer
    ? `<p class="question">Question ${answer.position}: ${e(answer.question)}</p>`
    : turn.answer_id
      ? ''
      : '<p class="question">Introduction</p>';
  const recordings = conversation.recordings
    .filter((r) => r.turn === turn.turn)
    .map((r) => playerHtml(r, toData));
  return `<li class="turn" id="${e(conversation.name)}-turn-${turn.turn}">${question}
<div><span class="who">Moderator</span><span class="said">${e(turn.moderator)}</span></div>
<div><span class="who">Respondent</span><span class="said">${turn.user ? e(turn.user) : '<em>(no reply)</em>'}</span></div>
${recordings.join('\n')}</li>`;
}

/** Audio, then MP4, then HLS: what a browser plays first (an MPEG-TS file, if not its MP4 copy). */
const kindOrder = ['audio', 'video', 'hls'];

function recordingsOf(conversation: Conversation, turn: number): TurnRecording[] {
  const rank = (kind: string) => (kindOrder.includes(kind) ? kindOrder.indexOf(kind) : kindOrder.length);
  return conversation.recordings.filter((r) => r.turn === turn).sort((a, b) => rank(a.kind) - rank(b.kind));
}

const kindLabel: Record<string, string> = {
  audio: 'Audio',
  video: 'Video (MP4)',
  hls: 'Video (HLS, one MPEG-TS file)',
};

/** Whether a browser plays the file from an <audio> or <video> element: none plays MPEG-TS. */
function browsersPlay(path: string): boolean {
  return !/\.ts$/i.test(path);
}

function playerHtml(recording: TurnRecording, toData: string): string {
  const label = kindLabel[recording.kind] ?? recording.kind;
  const note = recording.note ? `<p class="note">${e(label)}: ${e(recording.note)}</p>` : '';
  if (!recording.file) return `<p class="note">${e(label)}: not in this bag: ${e(recording.note ?? '')}</p>`;
  const href = (path: string) => e(`${toData}${path}`);
  const played = recording.copy ?? recording.file;
  if (!browsersPlay(played)) {
    // The MP4 recording of its turn has the player (media.video: both); or no copy could be made.
    return `<p class="recording">${e(label)}: <a href="${href(recording.file)}" download data-kind="${e(recording.kind)}">${e(recording.file)}</a> (MPEG-TS, which no browser plays: open it in VLC, mpv or ffplay)</p>${note}`;
  }
  const element = recording.kind === 'audio' ? 'audio' : 'video';
  const copy = recording.copy
    ? `; played here: its copy as MP4, <a href="${href(recording.copy)}">${e(recording.copy)}</a>`
    : '';
  return `<figure><${element} controls preload="none" src="${href(played)}" data-kind="${e(recording.kind)}"></${element}>
<figcaption>${e(label)}: <a href="${href(recording.file)}">${e(recording.file)}</a>${copy}</figcaption></figure>${note}`;
}

/** The same conversation as plain text: a heading, its facts, then each turn. */
export function conversationText(conversation: Conversation, studyTitle: string): string {
  const { response, attributes } = conversation;
  const lines = [
    `${conversationTitle(response)} of "${oneLine(studyTitle)}"`,
    '',
    `Response id: ${response.response_id}`,
    `Created: ${response.created_at} UTC`,
    `Updated: ${response.updated_at ?? '-'} UTC`,
    `Modality: ${response.modality}`,
    `Status: ${response.summary ? 'complete' : 'in progress (no summary yet)'}`,
    ...attributes.map((a) => `Attribute: ${oneLine(a.key)} = ${oneLine(a.value)}`),
    ...(response.summary ? ['', 'Summary:', indent(response.summary)] : []),
  ];
  for (const turn of conversation.transcript) {
    const answer = turn.answer_id ? conversation.answers.get(turn.answer_id) : undefined;
    lines.push(
      '',
      `--- Turn ${turn.turn}${answer ? `, question ${answer.position}: ${oneLine(answer.question)}` : turn.answer_id ? '' : ', introduction'}`,
    );
    lines.push('Moderator:', indent(turn.moderator), 'Respondent:', indent(turn.user || '(no reply)'));
    for (const recording of recordingsOf(conversation, turn.turn)) {
      lines.push(
        recording.file
          ? `Recording (${recording.kind}): ${recording.file}${recording.copy ? `, its copy as MP4: ${recording.copy}` : ''}${recording.note ? ` (${oneLine(recording.note)})` : ''}`
          : `Recording (${recording.kind}) not in this bag: ${oneLine(recording.note ?? '')}`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();
const indent = (text: string) =>
  text
    .split(/\r\n|\r|\n/)
    .map((line) => `    ${line}`)
    .join('\n');
