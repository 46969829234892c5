/**
 * Variable names for the statistics packages: short, unique, valid in SPSS and Stata alike (a
 * letter first, then letters, digits and `_`, at most 32 characters; SPSS ignores case, so
 * uniqueness ignores it too) and stable: a question slot's name comes from its ids, never from
 * its position or its text, so every run names it the same and a reworded question keeps it.
 *
 * A slot whose ids are plain (lower-case letters and digits in groups joined by single `-`,
 * as "dg-3" and "concept-a") is named from them, `q_<question id>` or
 * `q_<question id>__<concept id>` with `-` as `_` ("q_dg_3__concept_a"): two different plain
 * slots can never get one name that way. Any other slot, or one whose name would pass 32
 * characters, is named from what can be kept of its ids and the first six hex digits of a
 * SHA-256 of them. An attribute key is named the same way with `a_`.
 */
import { createHash } from 'node:crypto';

export const NAME_MAX = 32;
const PLAIN_ID = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
/** Attribute keys are often snake_case (utm_source); two keys differing only in `-` or `_` meet in uniqueNames. */
const PLAIN_KEY = /^[a-z0-9]+(?:[-_][a-z0-9]+)*$/;

const plain = (id: string) => id.replaceAll('-', '_');

function hashed(prefix: string, ids: readonly string[], key: string): string {
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 6);
  const kept = ids
    .join('_')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  const room = NAME_MAX - prefix.length - hash.length - 1;
  const stem = kept.slice(0, room).replace(/_+$/, '');
  return stem ? `${prefix}${stem}_${hash}` : `${prefix}${hash}`;
}

/** The name of a question slot's variable, from its question id and concept id. */
export function slotVariableName(questionId: string, conceptId: string | null): string {
  const ids = conceptId === null ? [questionId] : [questionId, conceptId];
  const key = JSON.stringify([questionId, conceptId]);
  if (ids.every((id) => PLAIN_ID.test(id))) {
    const name = `q_${ids.map(plain).join('__')}`;
    if (name.length <= NAME_MAX) return name;
  }
  return hashed('q_', ids, key);
}

/** The name of an attribute key's variable. */
export function attributeVariableName(key: string): string {
  if (PLAIN_KEY.test(key)) {
    const name = `a_${plain(key)}`;
    if (name.length <= NAME_MAX) return name;
  }
  return hashed('a_', [key], JSON.stringify(['attribute', key]));
}

/**
 * The names made unique, case aside, in the order given (so put the ones that must never
 * change first): a name already taken gets `_2`, `_3`… in place of its last characters. By
 * the rules above only two slots whose ids hash to the same six digits can meet here.
 */
export function uniqueNames(names: readonly string[]): string[] {
  const taken = new Set<string>();
  return names.map((name) => {
    let unique = name;
    for (let n = 2; taken.has(unique.toLowerCase()); n++) {
      const suffix = `_${n}`;
      unique = `${name.slice(0, NAME_MAX - suffix.length)}${suffix}`;
    }
    taken.add(unique.toLowerCase());
    return unique;
  });
}

/** Whether a name is valid in both SPSS and Stata, as this module makes them. */
export function isVariableName(name: string): boolean {
  return /^[A-Za-z][A-Za-z0-9_]{0,31}$/.test(name);
}
