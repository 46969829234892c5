/**
 * Finding personal data in text: the built-in detectors (email, phone, url, ip), the terms list
 * and the profile's own patterns. A match names its kind, where it is, and the form two
 * spellings of one thing share (an email in any case, a phone number's digits, a term in any
 * case), so that one thing gets one tag. Pure.
 */
import type { PrivacyDetector } from '../config/schema.ts';

export type TagKind = 'EMAIL' | 'PHONE' | 'URL' | 'IP' | 'NAME' | 'PATTERN';
export const tagKinds: readonly TagKind[] = ['EMAIL', 'PHONE', 'URL', 'IP', 'NAME', 'PATTERN'];

export const kindOfDetector: Record<PrivacyDetector, TagKind> = {
  email: 'EMAIL',
  phone: 'PHONE',
  url: 'URL',
  ip: 'IP',
};

export interface Match {
  kind: TagKind;
  start: number;
  end: number;
  /** What two spellings of one thing share. */
  key: string;
}

/** Not a letter, digit or underscore, in any script. */
const edge = '[^\\p{L}\\p{N}\\p{M}_]';
const before = `(?<=^|${edge})`;
const after = `(?=$|${edge})`;

const emailPattern = new RegExp(
  `${before}[\\p{L}\\p{N}._%+'-]+@[\\p{L}\\p{N}-]+(?:\\.[\\p{L}\\p{N}-]+)*\\.\\p{L}{2,}${after}`,
  'gu',
);

const topLevel =
  'com|org|net|edu|gov|io|co|me|info|biz|dev|app|eu|uk|de|fr|es|it|nl|be|ch|at|se|no|dk|pl|pt|ie|br|mx|ar|in|jp|cn|au|ca|us';
const urlPattern = new RegExp(
  [
    // A web or FTP address (or www.), up to a space or a bracket; other schemes are formats' own.
    `${before}(?:(?:https?|s?ftp)://|www\\.)[^\\s<>"'\`()\\[\\]{}]+`,
    // A bare domain of a common top-level domain, with or without a path.
    `${before}[\\p{L}\\p{N}-]+(?:\\.[\\p{L}\\p{N}-]+)*\\.(?:${topLevel})(?:\\/[^\\s<>"'\`()\\[\\]{}]*)?${after}`,
  ].join('|'),
  'giu',
);

const mayHoldUrl = new RegExp(`:\\/\\/|www\\.|\\.(?:${topLevel})\\b`, 'i');

const mayHoldIp = /\d\.\d|[0-9a-f]:[0-9a-f]*:/i;

const octet = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const ipv4 = `(?<![\\d.])${octet}(?:\\.${octet}){3}(?![\\d]|\\.\\d)`;
const hex = '[0-9a-f]{1,4}';
const ipv6 = `(?<![\\w:])(?:${hex}(?::${hex}){7}|(?:${hex}(?::${hex}){0,6})?::(?:${hex}(?::${hex}){0,6})?)(?![\\w:])`;
const ipPattern = new RegExp(`${ipv6}|${ipv4}`, 'giu');

/** A run of digit groups with the separators phone numbers are written with. */
const phonePattern =
  /(?<![\p{L}\p{N}_+./:@-])(?:\+|00)?(?:\(\d{1,5}\)|\d{1,5})(?:(?: ?[./-] ?| )?(?:\(\d{1,5}\)|\d{1,5})){1,7}(?![\p{L}\p{N}_@]|[./:-]\d)/gu;

/** Whether a run of digit groups is written as a phone number is (and not a date, an amount, a time). */
export function isPhoneNumber(text: string): boolean {
  const digits = text.replace(/\D/g, '');
  if (/^(?:\+|00)/.test(text)) return digits.length >= 8 && digits.length <= 15;
  // Dates and decimal amounts are never phone numbers.
  if (/^\d{1,4}[./-]\d{1,2}[./-]\d{1,4}$/.test(text) || /^\d{1,3}(?:[.,]\d{3})+$/.test(text)) return false;
  // A trunk prefix 0 (or one in brackets): national forms in most of Europe, Asia and Oceania.
  if (/^\(?0/.test(text)) return digits.length >= 9 && digits.length <= 12;
  // North American: (212) 555-0147, 212-555-0147, 212.555.0147, 212 555 0147.
  if (/^(?:\(\d{3}\) ?|\d{3}[-. ])\d{3}[-. ]\d{4}$/.test(text)) return true;
  // Nine digits grouped 3-3-3 or 3-2-2-2 (Spain, Portugal), without a trunk prefix.
  return /^[5-9]\d{2}(?: \d{3} \d{3}| \d{2} \d{2} \d{2})$/.test(text);
}

export interface DetectorSet {
  detect: readonly PrivacyDetector[];
  /** The terms list (case-insensitive, on word boundaries), or null. */
  terms: TermIndex | null;
  patterns: readonly RegExp[];
}

/** A match's key from the text it spans, by kind: what two spellings of one thing share. */
export const keyOfSpan: Readonly<Record<TagKind, (span: string) => string>> = {
  EMAIL: (v) => v.toLowerCase(),
  PHONE: (v) => `${/^(?:\+|00)/.test(v) ? '+' : ''}${v.replace(/^00/, '').replace(/\D/g, '')}`,
  URL: (v) => v.toLowerCase().replace(/\/+$/, ''),
  IP: (v) => v.toLowerCase(),
  NAME: (v) => v.normalize('NFC').toLowerCase().replace(/\s+/g, ' '),
  PATTERN: (v) => v,
};

const wordPattern = /[\p{L}\p{N}\p{M}_]+/gu;

/**
 * The terms, found word by word: each word of a text is looked up (in lower case) among the
 * terms' first words, and only there is a term tried, longest first, so "Anna Maria" wins over
 * "Anna"; the spaces inside a term match any run of white space. One expression of every term
 * would try them all at every character.
 */
export class TermIndex {
  readonly #byFirstWord = new Map<string, RegExp[]>();
  /** Terms that do not start with a letter or digit: tried as one expression. */
  readonly #others: RegExp | null;

  constructor(terms: readonly string[]) {
    const unique = [...new Set(terms.map((term) => term.normalize('NFC').trim()))].filter(
      (term) => term !== '',
    );
    const longestFirst = unique.sort((a, b) => b.length - a.length || (a < b ? -1 : 1));
    const others: string[] = [];
    for (const term of longestFirst) {
      const first = /^[\p{L}\p{N}\p{M}_]+/u.exec(term)?.[0];
      if (!first) {
        others.push(source(term));
        continue;
      }
      const key = first.toLowerCase();
      const list = this.#byFirstWord.get(key) ?? [];
      list.push(new RegExp(`${source(term)}${after}`, 'iuy'));
      this.#byFirstWord.set(key, list);
    }
    this.#others = others.length > 0 ? new RegExp(`${before}(?:${others.join('|')})${after}`, 'giu') : null;
  }

  get size(): number {
    return [...this.#byFirstWord.values()].reduce((sum, list) => sum + list.length, 0);
  }

  /** Where the terms are in `text`, left to right (overlaps resolved by the caller). */
  find(text: string): { start: number; end: number }[] {
    const found: { start: number; end: number }[] = [];
    wordPattern.lastIndex = 0;
    for (let word = wordPattern.exec(text); word; word = wordPattern.exec(text)) {
      const candidates = this.#byFirstWord.get(word[0].toLowerCase());
      if (!candidates) continue;
      for (const term of candidates) {
        term.lastIndex = word.index;
        const match = term.exec(text);
        if (match) {
          found.push({ start: word.index, end: word.index + match[0].length });
          break;
        }
      }
    }
    if (this.#others) {
      this.#others.lastIndex = 0;
      for (let match = this.#others.exec(text); match; match = this.#others.exec(text))
        found.push({ start: match.index, end: match.index + match[0].length });
    }
    return found;
  }
}

function source(term: string): string {
  return term.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\s+/g, '\\s+');
}

/** The terms list ready to find; null when it holds none. */
export function termsPattern(terms: readonly string[]): TermIndex | null {
  const index = new TermIndex(terms);
  return index.size > 0 || terms.some((term) => term.trim() !== '') ? index : null;
}

/** Every match in `text`, left to right, overlaps resolved: the earlier, then the longer, wins. */
export function findMatches(text: string, set: DetectorSet): Match[] {
  const found: Match[] = [];
  const add = (pattern: RegExp, kind: TagKind, keep = (_: string) => true) => {
    pattern.lastIndex = 0;
    // exec on the one expression: matchAll would copy it for every text.
    for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
      if (match[0] === '') pattern.lastIndex += 1;
      let value = match[0];
      if (kind === 'URL') value = value.replace(/[.,;:!?]+$/, '');
      if (value === '' || !keep(value)) continue;
      found.push({ kind, start: match.index, end: match.index + value.length, key: keyOfSpan[kind](value) });
    }
  };
  for (const detector of set.detect) {
    // Each expression only where a cheap search says it may match: most texts hold no "@".
    if (detector === 'email' && text.includes('@')) add(emailPattern, 'EMAIL');
    if (detector === 'url' && mayHoldUrl.test(text)) add(urlPattern, 'URL');
    if (detector === 'ip' && mayHoldIp.test(text))
      add(ipPattern, 'IP', (v) => v.includes('.') || hexGroups(v) >= 3);
    if (detector === 'phone' && digitCount(text) >= 7) add(phonePattern, 'PHONE', isPhoneNumber);
  }
  for (const { start, end } of set.terms?.find(text) ?? [])
    found.push({ kind: 'NAME', start, end, key: keyOfSpan.NAME(text.slice(start, end)) });
  for (const pattern of set.patterns) add(pattern, 'PATTERN');
  found.sort(
    (a, b) => a.start - b.start || b.end - a.end || tagKinds.indexOf(a.kind) - tagKinds.indexOf(b.kind),
  );
  const kept: Match[] = [];
  for (const match of found) {
    const last = kept.at(-1);
    if (last && match.start < last.end) continue;
    kept.push(match);
  }
  return kept;
}

/** Digits in `text`, counted up to 7: fewer cannot make a phone number. */
function digitCount(text: string): number {
  let digits = 0;
  for (let i = 0; i < text.length && digits < 7; i++) {
    const code = text.charCodeAt(i);
    if (code >= 48 && code <= 57) digits += 1;
  }
  return digits;
}

function hexGroups(value: string): number {
  return value.split(':').filter((group) => group !== '').length;
}
