/**
 * A few answers per question for report.html to show, chosen the same way whatever order the
 * rows pass in: the answers with text whose (response_id, answer_id) hash lowest. So a run
 * and its replay, or current/ counted from its parts, show the same answers, and a question's
 * sample is a fair one (the hash ignores what was said and when). Of fixed size per question,
 * and each kept text is cut to a fixed length, so a study of any size keeps it in memory.
 */

/** Answers shown per question. */
export const SAMPLE_SIZE = 5;
/** Characters (code points) of an answer kept for the report; the rest is in the tables. */
export const SAMPLE_TEXT_CHARS = 800;

export interface SampledAnswer {
  response_id: string;
  answer_id: string;
  /** The answer, cut to SAMPLE_TEXT_CHARS code points. */
  text: string;
  /** The whole answer's length in code points. */
  chars: number;
  /** Its place in the order: lower is kept first. */
  rank: number;
}

/** FNV-1a, 32 bits: cheap per answer, and the same on every machine and run. */
function rankOf(responseId: string, answerId: string): number {
  let hash = 0x811c9dc5;
  const key = `${responseId}\u0000${answerId}`;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

function before(a: SampledAnswer, b: SampledAnswer): boolean {
  if (a.rank !== b.rank) return a.rank < b.rank;
  return a.response_id !== b.response_id ? a.response_id < b.response_id : a.answer_id < b.answer_id;
}

/** Offers one answer (with text) to `sample`, kept sorted, lowest rank first. */
export function offerAnswer(
  sample: SampledAnswer[],
  responseId: string,
  answerId: string,
  text: string,
): void {
  const rank = rankOf(responseId, answerId);
  const last = sample.at(-1);
  if (sample.length >= SAMPLE_SIZE && last && last.rank < rank) return;
  if (sample.some((kept) => kept.response_id === responseId && kept.answer_id === answerId)) return;
  const chars = codePoints(text);
  const entry: SampledAnswer = {
    response_id: responseId,
    answer_id: answerId,
    text: chars > SAMPLE_TEXT_CHARS ? Array.from(text).slice(0, SAMPLE_TEXT_CHARS).join('') : text,
    chars,
    rank,
  };
  let at = sample.length;
  while (at > 0 && before(entry, sample[at - 1]!)) at -= 1;
  if (at >= SAMPLE_SIZE) return;
  sample.splice(at, 0, entry);
  if (sample.length > SAMPLE_SIZE) sample.pop();
}

/** Characters as people count them (code points), without building an array per answer. */
export function codePoints(text: string): number {
  let count = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) count -= 1;
  }
  return count;
}
