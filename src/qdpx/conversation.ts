/**
 * A response's conversation as a plain text source: its turns in order, each speaker labelled,
 * and where each answer passage lies in it.
 *
 * Positions count Unicode code points, as QualCoder's importer does (it cuts `text[start:end]`
 * from a Python string): a JavaScript string counts UTF-16 units, so an emoji before a passage
 * would shift it by one per emoji. Line ends are LF only: QualCoder reads the file with
 * Python's universal newlines (CR and CRLF become LF, which would shift every later position),
 * and a first line ending in CRLF makes it insert a space after every LF. The text is
 * well-formed (a lone surrogate becomes U+FFFD, one code point either way), and is written
 * without a BOM, which would become character 0.
 *
 * An answer is coded where the respondent said it: on each of its turns' replies (a follow-up
 * question gives an answer two turns; the moderator's words between are not coded). When the
 * answer as the service gives it is not those replies joined by line ends (or it has no turns),
 * it is written once more after the conversation, under its question, and coded there.
 */
import type { Row } from '../tables/index.ts';
import type { QdpxResponse } from './types.ts';

/** One coded passage: [start, end) in code points of the source text. */
export interface Passage {
  start: number;
  end: number;
  /** The answer it belongs to, or null for the summary. */
  answer: Row<'answers'> | null;
  /** The transcript turn it was said in; null when written after the conversation. */
  turn: number | null;
}

export interface ConversationText {
  text: string;
  passages: Passage[];
}

export const speakers = { moderator: 'Moderator', respondent: 'Respondent' } as const;
export const answersHeading = 'Answers as the service recorded them';
export const summaryHeading = 'Summary (written by the service)';

/** Text as the source file holds it: LF line ends, well-formed. */
export function sourceText(text: string): string {
  return text.replace(/\r\n?/g, '\n').replace(loneSurrogate, '\ufffd');
}

const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Code points in `text` (a well-formed string). */
export function codePoints(text: string): number {
  let pairs = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      pairs++;
      i++;
    }
  }
  return text.length - pairs;
}

/** Builds the text piece by piece, counting code points as it goes. */
class TextBuilder {
  readonly #pieces: string[] = [];
  #position = 0;

  get position(): number {
    return this.#position;
  }

  add(piece: string): void {
    this.#pieces.push(piece);
    this.#position += codePoints(piece);
  }

  /** Adds `piece` and returns where it lies. */
  span(piece: string): { start: number; end: number } {
    const start = this.#position;
    this.add(piece);
    return { start, end: this.#position };
  }

  toString(): string {
    return this.#pieces.join('');
  }
}

/** The conversation of `response` with `heading` on its first line. */
export function conversationText(
  response: QdpxResponse,
  heading: string,
  questionLabel: (answer: Row<'answers'>) => string,
): ConversationText {
  const out = new TextBuilder();
  const passages: Passage[] = [];
  out.add(`${sourceText(heading)}\n`);
  const inTurns = answersCodedInTurns(response);
  for (const row of response.transcript) {
    const moderator = sourceText(row.moderator);
    const user = sourceText(row.user);
    if (moderator === '' && user === '') continue;
    out.add('\n');
    if (moderator !== '') out.add(`${speakers.moderator}: ${moderator}\n`);
    if (user === '') continue;
    out.add(`${speakers.respondent}: `);
    const span = out.span(user);
    out.add('\n');
    const answer = row.answer_id === null ? undefined : inTurns.get(row.answer_id);
    if (answer) passages.push({ ...span, answer, turn: row.turn });
  }
  const apart = response.answers.filter((a) => !inTurns.has(a.answer_id) && sourceText(a.answer) !== '');
  if (apart.length > 0) out.add(`\n${answersHeading}\n`);
  for (const answer of apart) {
    out.add(`\n${sourceText(questionLabel(answer))}\n`);
    passages.push({ ...out.span(sourceText(answer.answer)), answer, turn: null });
    out.add('\n');
  }
  const summary = sourceText(response.response.summary ?? '');
  if (summary !== '') {
    out.add(`\n${summaryHeading}\n`);
    passages.push({ ...out.span(summary), answer: null, turn: null });
    out.add('\n');
  }
  return { text: out.toString(), passages };
}

/**
 * The answers whose text is exactly their turns' non-empty replies joined by line ends (after
 * the same line-end rule), by answer id: those are coded where they were said.
 */
function answersCodedInTurns(response: QdpxResponse): Map<string, Row<'answers'>> {
  const replies = new Map<string, string[]>();
  for (const row of response.transcript) {
    const user = sourceText(row.user);
    if (row.answer_id === null || user === '') continue;
    const list = replies.get(row.answer_id) ?? [];
    list.push(user);
    replies.set(row.answer_id, list);
  }
  const coded = new Map<string, Row<'answers'>>();
  for (const answer of response.answers) {
    const said = replies.get(answer.answer_id);
    if (said && said.join('\n') === sourceText(answer.answer)) coded.set(answer.answer_id, answer);
  }
  return coded;
}
