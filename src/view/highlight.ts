import { escapeHtml as e } from '../output/codecs/escape.ts';

/**
 * Words found in text, for the viewer's search: text and words are compared folded (lower
 * case, accents and other combining marks dropped, compatibility forms unified: "Café",
 * "cafe\u0301" and "CAFE" all read "cafe"), and what was found is marked in the text as
 * written. Every piece of text leaves here HTML-escaped; only <mark> is added.
 */

const ascii = /^[\x00-\x7f]*$/;
const marks = /\p{M}/gu;

/** Text folded for comparison; `at[i]` is where folded unit i came from in the original. */
interface Folded {
  text: string;
  /** null: the same positions as the original (ASCII text). */
  at: number[] | null;
}

function foldWithPositions(text: string): Folded {
  if (ascii.test(text)) return { text: text.toLowerCase(), at: null };
  let folded = '';
  const at: number[] = [];
  let index = 0;
  for (const char of text) {
    const piece = char.toLowerCase().normalize('NFKD').replace(marks, '');
    for (let i = 0; i < piece.length; i++) at.push(index);
    folded += piece;
    index += char.length;
  }
  return { text: folded, at };
}

/** Text as search compares it (see above). */
export function fold(text: string): string {
  return foldWithPositions(text).text;
}

/**
 * The terms of a query, folded: its words, and a "quoted phrase" as one term; each once.
 * Empty for a query of spaces.
 */
export function queryTerms(query: string): string[] {
  const terms: string[] = [];
  for (const match of query.matchAll(/"([^"]*)"|(\S+)/g)) {
    const term = fold((match[1] ?? match[2] ?? '').replace(/\s+/g, ' ').trim());
    if (term !== '' && !terms.includes(term)) terms.push(term);
  }
  return terms;
}

export type Range = readonly [start: number, end: number];

/** Where the terms occur in `text` (positions in the text as written), sorted and merged. */
export function findTerms(text: string, terms: readonly string[]): Range[] {
  if (terms.length === 0 || text === '') return [];
  const folded = foldWithPositions(text);
  const original = (i: number) => (folded.at ? (folded.at[i] ?? text.length) : i);
  const found: [number, number][] = [];
  for (const term of terms) {
    for (
      let from = folded.text.indexOf(term);
      from >= 0;
      from = folded.text.indexOf(term, from + term.length)
    ) {
      const end = from + term.length;
      // The end is where the next original character starts (a folded character may be several units).
      found.push([original(from), charEnd(text, original(end - 1))]);
    }
  }
  found.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const merged: [number, number][] = [];
  for (const range of found) {
    const previous = merged.at(-1);
    if (previous && range[0] <= previous[1]) previous[1] = Math.max(previous[1], range[1]);
    else merged.push([range[0], range[1]]);
  }
  return merged;
}

/** Where the character at `index` ends, with the combining marks that follow it. */
function charEnd(text: string, index: number): number {
  let end = index + ((text.codePointAt(index) ?? 0) > 0xffff ? 2 : 1);
  for (;;) {
    const next = text.codePointAt(end);
    if (next === undefined || !/\p{M}/u.test(String.fromCodePoint(next))) return end;
    end += next > 0xffff ? 2 : 1;
  }
}

/** Text as HTML with each range in <mark>; ranges sorted, within the text. */
export function markedHtml(text: string, ranges: readonly Range[], offset = 0): string {
  let html = '';
  let at = 0;
  for (const [start, end] of ranges) {
    const s = start - offset;
    const t = end - offset;
    if (t <= 0 || s >= text.length) continue;
    html += `${e(text.slice(at, Math.max(at, s)))}<mark>${e(text.slice(Math.max(at, s), Math.min(t, text.length)))}</mark>`;
    at = Math.min(t, text.length);
  }
  return html + e(text.slice(at));
}

/** Characters of context before the first match in a snippet. */
const LEAD = 70;

/**
 * An answer-sized piece of `text` around its first match, cut at spaces (never in a word,
 * unless a word is longer than the whole snippet), with an ellipsis where cut, the matches
 * marked. Line breaks read as spaces.
 */
export function snippetHtml(text: string, ranges: readonly Range[], width = 240): string {
  const first = ranges[0];
  if (text.length <= width) return markedHtml(text, ranges);
  if (!first) return `${e(cutEnd(text, 0, width))} …`;
  let start = Math.max(0, first[0] - LEAD);
  if (start > 0) {
    const space = nextSpace(text, start, first[0]);
    start = space < 0 ? first[0] : space + 1;
  }
  const piece = cutEnd(text, start, width);
  const cut = start + piece.length < text.length;
  return `${start > 0 ? '… ' : ''}${markedHtml(piece, ranges, start)}${cut ? ' …' : ''}`;
}

/** The first whitespace in text[from, before), or -1. */
function nextSpace(text: string, from: number, before: number): number {
  for (let i = from; i < before; i++) if (/\s/.test(text[i]!)) return i;
  return -1;
}

/** text[start…] up to `width` units, ending before a space (or at a character's end). */
function cutEnd(text: string, start: number, width: number): string {
  const end = Math.min(text.length, start + width);
  if (end === text.length) return text.slice(start);
  for (let i = end; i > start + width / 2; i--) if (/\s/.test(text[i]!)) return text.slice(start, i);
  // No space (CJK, a long token): cut between characters, never inside a surrogate pair.
  const unit = text.charCodeAt(end - 1);
  return text.slice(start, unit >= 0xd800 && unit <= 0xdbff ? end - 1 : end);
}
