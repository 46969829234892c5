/**
 * A JSON array's elements, parsed one at a time. A listing page parsed whole is alive at once
 * as its text, its parsed array and what is made from it, and in a large run that page is
 * most of what memory grows by (bench/README.md). One pass over the bytes finds where each top-level
 * element starts and ends (strings and their escapes skipped, brackets matched), and each
 * element is decoded and parsed by JSON.parse only when it is taken, then let go.
 *
 * The pass checks the structure (one array, brackets balanced and matched, strings closed,
 * nothing after the end); whatever fails it is left to JSON.parse of the whole text, so that
 * such a body fails exactly as before. An element that is balanced but still not JSON comes
 * back as its text and the reason; extract fails the page with it (src/extract/responses.ts).
 */

import { isUtf8 } from 'node:buffer';

/**
 * A key an element's object member holds more than once (`{"utm":"a","utm":"b"}`), which
 * JSON.parse silently resolves to the last. `alike`: every copy's value is the same.
 */
export interface RepeatedKey {
  member: KeyedMember;
  key: string;
  copies: number;
  alike: boolean;
}

/**
 * The members of a list item whose keys are data (spec 2.2): attributes (URL parameter names)
 * and answers (question keys, the answer ids when answers_array is absent).
 */
export type KeyedMember = 'attributes' | 'answers';
const keyedMembers: readonly KeyedMember[] = ['attributes', 'answers'];
const keyedMemberBytes = keyedMembers.map((name) => Buffer.from(name));

/**
 * `bytes`: the element's size as received, when it came as bytes. `repeatedKeys`: keys its
 * keyed members hold twice in the text (answers only when the item has no answers_array).
 */
export type ParsedElement =
  | { ok: true; value: unknown; bytes?: number; repeatedKeys?: RepeatedKey[] }
  | { ok: false; text: string; reason: string };

export interface JsonArrayElements {
  readonly length: number;
  /** Whether arrays and objects nest more than `limit` deep, the array itself counting one. */
  nestsDeeperThan(limit: number): boolean;
  /** Element `index`, parsed now. */
  element(index: number): ParsedElement;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const COMMA = 0x2c;

/** JSON's whitespace: space, tab, line feed, carriage return. */
function isSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

function isBlank(bytes: Uint8Array, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (!isSpace(bytes[i])) return false;
  return true;
}

/**
 * One line of UTF-8: what raw/ can store as received (a JSON line); JSON allows line breaks
 * between tokens, and readers split lines on CR as well as LF.
 */
export function oneLineOfUtf8(bytes: Uint8Array): boolean {
  return bytes.indexOf(0x0a) === -1 && bytes.indexOf(0x0d) === -1 && bytes.length > 0 && isUtf8(bytes);
}

/** Bytes of a string looked at one by one before the rest is searched by indexOf. */
const SHORT_STRING = 4;

/**
 * Offset of the quote that closes the string whose text starts at `from`; -1 if none. Most of
 * a page's bytes are in long strings (answers, transcripts), which indexOf crosses natively
 * several times faster than a loop here; keys end within a few bytes, before it is worth a call.
 */
function stringEnd(bytes: Buffer, from: number): number {
  const n = bytes.length;
  const shortEnd = Math.min(n, from + SHORT_STRING);
  let i = from;
  for (; i < shortEnd; i++) {
    const byte = bytes[i];
    if (byte === QUOTE) return i;
    if (byte === BACKSLASH) i++;
  }
  for (let at = i; at < n; ) {
    const quote = bytes.indexOf(QUOTE, at);
    if (quote < 0) return -1;
    // Escaped when an odd number of backslashes stand right before it (the string's opening
    // quote stops the count).
    let backslashes = 0;
    while (bytes[quote - backslashes - 1] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
    at = quote + 1;
  }
  return -1;
}

/**
 * The elements of the array `bytes` holds; null when they hold no well-formed array, or are
 * not one line of UTF-8 (so that a page split here is always stored in raw/ as received).
 */
export function splitJsonArray(bytes: Buffer): JsonArrayElements | null {
  if (!oneLineOfUtf8(bytes)) return null;
  const n = bytes.length;
  let i = 0;
  while (i < n && isSpace(bytes[i])) i++;
  if (bytes[i] !== OPEN_ARRAY) return null;
  const closers: number[] = [CLOSE_ARRAY];
  let depth = 1;
  /** Start and end offsets of each element, in pairs. */
  const bounds: number[] = [];
  /** Keyed members' objects: element index, member index, start and end offsets, in fours. */
  const members: number[] = [];
  /** Where each element's first keyed member is in `members`. */
  const firstMember: number[] = [];
  /** The keyed member whose key was just read at an element's top level (-1: none). */
  let pendingMember = -1;
  let start = i + 1;
  let end = -1;
  for (i += 1; i < n; i++) {
    const byte = bytes[i];
    if (byte === QUOTE) {
      const close = stringEnd(bytes, i + 1);
      if (close < 0) return null;
      // An element's own keys only (two levels down): a cheap length test first.
      if (closers.length === 2) pendingMember = keyedMemberAt(bytes, i + 1, close);
      i = close;
    } else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      if (closers.length === 2 && pendingMember >= 0 && byte === OPEN_OBJECT) {
        firstMember[bounds.length / 2] ??= members.length;
        members.push(bounds.length / 2, pendingMember, i, -1);
      }
      if (closers.length === 2) pendingMember = -1;
      closers.push(byte === OPEN_ARRAY ? CLOSE_ARRAY : CLOSE_OBJECT);
      depth = Math.max(depth, closers.length);
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
      if (closers.pop() !== byte) return null;
      if (closers.length === 2 && members.at(-1) === -1) members[members.length - 1] = i;
      if (closers.length === 0) {
        bounds.push(start, i);
        end = i;
        break;
      }
    } else if (byte === COMMA && closers.length === 1) {
      bounds.push(start, i);
      start = i + 1;
    }
  }
  if (end < 0 || !isBlank(bytes, end + 1, n)) return null;
  // `[]`: one blank range and no comma. A blank range anywhere else (`[1,]`) is not JSON.
  if (bounds.length === 2 && isBlank(bytes, bounds[0] as number, bounds[1] as number)) bounds.length = 0;
  for (let k = 0; k < bounds.length; k += 2) {
    if (isBlank(bytes, bounds[k] as number, bounds[k + 1] as number)) return null;
  }
  return {
    length: bounds.length / 2,
    nestsDeeperThan: (limit) => depth > limit,
    element(index) {
      const start = bounds[2 * index] as number;
      const end = bounds[2 * index + 1] as number;
      const text = bytes.toString('utf8', start, end);
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (error) {
        return { ok: false, text: text.trim(), reason: `not JSON (${(error as Error).message})` };
      }
      const first = firstMember[index];
      const repeatedKeys = first === undefined ? [] : repeatedKeysOf(bytes, members, first, index, value);
      return repeatedKeys.length > 0
        ? { ok: true, value, bytes: end - start, repeatedKeys }
        : { ok: true, value, bytes: end - start };
    },
  };
}

/** Whether the flat object's keys, as raw bytes, repeat or hold an escape (which could hide a repeat). */
function mayRepeatKeys(bytes: Buffer, start: number, end: number): boolean {
  const keys = new Set<string>();
  let expectKey = true;
  let nesting = 0;
  for (let i = start + 1; i < end; i++) {
    const byte = bytes[i];
    if (byte === QUOTE) {
      const close = stringEnd(bytes, i + 1);
      if (expectKey && nesting === 0) {
        const key = bytes.toString('latin1', i + 1, close);
        if (key.includes('\\') || keys.has(key)) return true;
        keys.add(key);
        expectKey = false;
      }
      i = close;
    } else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) nesting++;
    else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) nesting--;
    else if (byte === COMMA && nesting === 0) expectKey = true;
  }
  return false;
}

/** Which keyed member the key `bytes[from, to)` names, or -1. */
function keyedMemberAt(bytes: Buffer, from: number, to: number): number {
  const length = to - from;
  for (let m = 0; m < keyedMemberBytes.length; m++) {
    const name = keyedMemberBytes[m] as Buffer;
    if (name.length === length && bytes.compare(name, 0, length, from, to) === 0) {
      // A key only when a colon follows (else it was a string value).
      let next = to + 1;
      while (isSpace(bytes[next])) next++;
      return bytes[next] === 0x3a ? m : -1;
    }
  }
  return -1;
}

/** Keys repeated in the keyed members of element `index` (answers only without answers_array). */
function repeatedKeysOf(
  bytes: Buffer,
  members: readonly number[],
  first: number,
  index: number,
  value: unknown,
): RepeatedKey[] {
  const found: RepeatedKey[] = [];
  for (let k = first; k < members.length && members[k] === index; k += 4) {
    const member = keyedMembers[members[k + 1] as number] as KeyedMember;
    const item = value as Record<string, unknown> | null;
    if (member === 'answers' && item !== null && typeof item === 'object' && 'answers_array' in item)
      continue;
    const start = members[k + 2] as number;
    const end = members[k + 3] as number;
    if (end > start) found.push(...repeatedKeysIn(bytes, start, end, member));
  }
  return found;
}

/**
 * The keys the flat object `bytes[start..end]` (its braces included) holds more than once,
 * with whether their values are alike. Members are split at commas outside strings and
 * brackets; each member's key and value are read with JSON.parse.
 */
function repeatedKeysIn(bytes: Buffer, start: number, end: number, member: KeyedMember): RepeatedKey[] {
  // Most objects repeat nothing: their keys' raw bytes are compared first, and only an object
  // with a repeated or escaped key is read member by member.
  if (!mayRepeatKeys(bytes, start, end)) return [];
  const values = new Map<string, unknown[]>();
  let from = start + 1;
  let nesting = 0;
  const take = (to: number) => {
    const open = bytes.indexOf(QUOTE, from);
    const at = from;
    from = to + 1;
    if (open < 0 || open >= to || !isBlank(bytes, at, open)) return;
    const close = stringEnd(bytes, open + 1);
    const colon = bytes.indexOf(0x3a, close + 1);
    const key = JSON.parse(bytes.toString('utf8', open, close + 1)) as string;
    const copies = values.get(key) ?? [];
    copies.push(JSON.parse(bytes.toString('utf8', colon + 1, to)));
    values.set(key, copies);
  };
  for (let i = start + 1; i < end; i++) {
    const byte = bytes[i];
    if (byte === QUOTE) i = stringEnd(bytes, i + 1);
    else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) nesting++;
    else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) nesting--;
    else if (byte === COMMA && nesting === 0) take(i);
  }
  take(end);
  const repeated: RepeatedKey[] = [];
  for (const [key, copies] of values) {
    if (copies.length < 2) continue;
    const first = JSON.stringify(copies[0]);
    const alike = copies.every((copy) => JSON.stringify(copy) === first);
    repeated.push({ member, key, copies: copies.length, alike });
  }
  return repeated;
}
