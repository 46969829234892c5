/**
 * Small deterministic helpers: a seeded PRNG (mulberry32) and stable hashes, so that the
 * sandbox's data set and faults are a pure function of the seed.
 */
import { createHash } from 'node:crypto';

export type Random = () => number;

/** mulberry32: a tiny, fast 32-bit PRNG; good enough for test data, never for secrets. */
export function mulberry32(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A 32-bit seed derived from any parts (FNV-1a over their string form). */
export function seedFrom(...parts: Array<string | number>): number {
  let hash = 0x811c9dc5;
  for (const char of parts.join('\u0000')) {
    hash ^= char.codePointAt(0) ?? 0;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** A PRNG seeded from the given parts. */
export function randomFor(...parts: Array<string | number>): Random {
  return mulberry32(seedFrom(...parts));
}

/** A version-4-shaped UUID that is a stable function of its parts. */
export function stableUuid(...parts: Array<string | number>): string {
  const hex = createHash('sha256').update(parts.join('|')).digest('hex');
  const variant = ((Number.parseInt(hex[16] ?? '0', 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** Short stable hex tag, e.g. for link ids. */
export function stableHex(length: number, ...parts: Array<string | number>): string {
  return createHash('sha256').update(parts.join('|')).digest('hex').slice(0, length);
}

export function pick<T>(random: Random, items: readonly T[]): T {
  const item = items[Math.floor(random() * items.length)];
  if (item === undefined) throw new Error('pick from an empty list');
  return item;
}

export function intBetween(random: Random, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}

/** A version-4-shaped uuid drawn from `random`. */
export function uuidFrom(random: Random): string {
  let hex = '';
  while (hex.length < 32)
    hex += Math.floor(random() * 0x100000000)
      .toString(16)
      .padStart(8, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
