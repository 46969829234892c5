/**
 * Keys that come from the service, held whatever it sends.
 *
 * - answer_id within a response (the answers table's key is response_id, answer_id): copies of
 *   one answer that are exactly alike collapse into the first, with a warning; copies that
 *   differ make the response a reject, since no rule can say which is the answer. The same
 *   for a key an attributes (or answers) object's text holds twice, which JSON.parse would
 *   silently resolve to the last (src/api/json-array.ts finds them).
 * - A response id belongs to one study (the responses table's key is response_id alone): the
 *   first study of a run to list it keeps it, and a response id that current/ already holds
 *   under one study stays there. Listed under another study, it is a reject there, naming both.
 */
import type { RepeatedKey } from '../api/json-array.ts';
import type { ListedResponse } from '../api/resources.ts';

/** What a list item's answers_array holds twice. */
export type AnswerKeys =
  | { ok: true; item: ListedResponse; collapsed: { answer_id: string; copies: number }[] }
  | { ok: false; reason: string };

/** The item with exact copies of an answer dropped, or why its answers cannot be keyed. */
export function keyedAnswers(item: ListedResponse): AnswerKeys {
  const answers = item.answers_array;
  if (!answers) return { ok: true, item, collapsed: [] };
  const first = new Map<string, number>();
  const copies = new Map<string, number>();
  for (const [index, answer] of answers.entries()) {
    const seen = first.get(answer.answer_id);
    if (seen === undefined) {
      first.set(answer.answer_id, index);
      continue;
    }
    if (!sameValue(answers[seen], answer)) {
      return {
        ok: false,
        reason: `answers_array[${index}].answer_id: "${answer.answer_id}" is also answers_array[${seen}], with different content; one key cannot hold both`,
      };
    }
    copies.set(answer.answer_id, (copies.get(answer.answer_id) ?? 1) + 1);
  }
  if (copies.size === 0) return { ok: true, item, collapsed: [] };
  const kept = answers.filter((answer, index) => first.get(answer.answer_id) === index);
  return {
    ok: true,
    item: { ...item, answers_array: kept },
    collapsed: [...copies].map(([answer_id, count]) => ({ answer_id, copies: count })),
  };
}

/** Why an item whose text names one key of `attributes` (or `answers`) twice, differently, is a reject. */
export function repeatedKeyReason(repeated: RepeatedKey): string {
  return `${repeated.member}: key "${repeated.key}" appears ${repeated.copies} times with different values; one key cannot hold both`;
}

/** JSON values equal whatever the order of their keys. */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  if (keys.length !== Object.keys(right).length) return false;
  return keys.every((key) => Object.hasOwn(right, key) && sameValue(left[key], right[key]));
}

/** The study a response id belongs to, and where that was decided. */
export interface ResponseOwner {
  study_id: string;
  link_id?: string;
  /** run: an earlier study of this run listed it; current: current/ holds it under that study. */
  where: 'run' | 'current';
}

/**
 * Where current/ already holds a response id under a study other than `studyId`, that owner;
 * else null. Loaded once, when a run first lists a response.
 */
export type KnownOwners = (responseId: string, studyId: string) => ResponseOwner | null;

/** Which study each response id of a run belongs to (shared by the run's studies). */
export class ResponseClaims {
  readonly #claims = new Map<string, ResponseOwner>();
  #known: Promise<KnownOwners> | null = null;

  constructor(private readonly loadKnown: () => Promise<KnownOwners> = async () => () => null) {}

  /** Null when the study may export the response; else the study that holds it. */
  async claim(responseId: string, study: { id: string; link_id: string }): Promise<ResponseOwner | null> {
    this.#known ??= this.loadKnown();
    const known = await this.#known;
    // Decided after the wait, with nothing awaited in between: two studies cannot both win.
    const claimed = this.#claims.get(responseId);
    if (claimed) return claimed.study_id === study.id ? null : claimed;
    const held = known(responseId, study.id);
    if (held) return held;
    this.#claims.set(responseId, { study_id: study.id, link_id: study.link_id, where: 'run' });
    return null;
  }
}

/** The reject reason of a response listed under `study` that belongs to `owner`. */
export function ownedElsewhere(
  responseId: string,
  study: { id: string; link_id: string },
  owner: ResponseOwner,
): string {
  const here = `study "${study.link_id}" (${study.id})`;
  const there =
    owner.link_id === undefined ? `study ${owner.study_id}` : `study "${owner.link_id}" (${owner.study_id})`;
  if (owner.where === 'current') {
    return `id: response "${responseId}" is listed under ${here}, but current/ holds it under ${there}; one response belongs to one study, so it stays there and is rejected here`;
  }
  return `id: response "${responseId}" is listed under two studies in this run, ${there}, which exports it, and ${here}, which rejects it`;
}
