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

/** `bytes`: the element's size as received, when it came as bytes. */
export type ParsedElement =
  | { ok: true; value: unknown; bytes?: number }
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
  let start = i + 1;
  let end = -1;
  for (i += 1; i < n; i++) {
    const byte = bytes[i];
    if (byte === QUOTE) {
      i = stringEnd(bytes, i + 1);
      if (i < 0) return null;
    } else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      closers.push(byte === OPEN_ARRAY ? CLOSE_ARRAY : CLOSE_OBJECT);
      depth = Math.max(depth, closers.length);
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
      if (closers.pop() !== byte) return null;
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
      try {
        return { ok: true, value: JSON.parse(text), bytes: end - start };
      } catch (error) {
        return { ok: false, text: text.trim(), reason: `not JSON (${(error as Error).message})` };
      }
    },
  };
}
