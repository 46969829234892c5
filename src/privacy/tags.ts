/**
 * A study's tags: every match in its texts becomes `[KIND-n]`, the same thing the same tag in
 * every answer, turn, summary and short transcript of the study. Numbers do not depend on the
 * order texts are read in, nor on which command reads them: a study's texts are all seen first
 * (`see`), and each kind's distinct things are then numbered in the order of their keyed
 * digests (HMAC-SHA-256 under the profile's secret), which says nothing about the things
 * themselves. So a study's texts are read twice (every one seen, then each replaced as it is
 * handed on); kept between are the distinct things, a 32-bit hash of each text that holds
 * none, and where the matches are in each text that holds one (up to `matchedTexts` of them,
 * as numbers that refer to the distinct things, never a piece of the text: a piece would keep
 * its whole text alive), so the second pass searches no text the first searched, unless a
 * study has more such texts. Pure.
 */
import { type DetectorSet, findMatches, keyOfSpan, type Match, type TagKind, tagKinds } from './detect.ts';
import { keyedDigest } from './pseudonym.ts';

export type KindCounts = Record<TagKind, number>;

/** Recent texts kept (a study's repeated questions and lines), and the longest kept by itself. */
const recentTexts = 4096;
const longText = 512;
/**
 * Texts holding a match whose matches are kept for the second pass (a slot of the table and
 * three words a match): beyond this many the second pass searches the others again.
 */
const matchedTexts = 100_000;

/** A thing tagged: its kind and the key its spellings share. */
interface Thing {
  kind: TagKind;
  key: string;
}

export function zeroCounts(): KindCounts {
  return Object.fromEntries(tagKinds.map((kind) => [kind, 0])) as KindCounts;
}

export class StudyTags {
  /** The distinct things tagged (what numbering needs), and each one's place among them. */
  readonly #things: Thing[] = [];
  readonly #thingIndex = new Map<string, number>();
  /**
   * The texts seen that hold no match, by a 32-bit hash: the second pass takes them as they are
   * without searching them again; a text that holds one, or one it did not see, is searched
   * again (and tagged, as any other). Four bytes a text, never the text.
   */
  readonly #clean = new HashSet32();
  /**
   * Where the matches are in the texts seen that hold one, by a 53-bit hash of the text,
   * confirmed by its length and by each span's key: the second pass does not search them again.
   */
  readonly #matched = new MatchTable();
  /**
   * The matches of the short texts searched most recently: a text repeated (a question in every
   * answer, a moderator's line in every conversation) is searched once in the first pass.
   */
  readonly #recent = new Map<string, Match[]>();
  #numbers: Map<string, number> | null = null;
  /** Replacements made in the study's texts, by kind: each occurrence once. */
  readonly occurrences: KindCounts = zeroCounts();

  constructor(
    private readonly secret: Buffer,
    private readonly detectors: DetectorSet,
  ) {}

  /** First pass: a text of the study. Every text is seen once, before any is replaced. */
  see(text: string | null | undefined): void {
    if (!text) return;
    if (this.#numbers) throw new Error('StudyTags: a text seen after the tags were numbered');
    const matches = this.#searched(text);
    const hash = hashOf(text);
    const things = matches.map((match) => this.#thingOf(match));
    for (const match of matches) this.occurrences[match.kind] += 1;
    if (matches.length === 0) this.#clean.add(hash >>> 0);
    else if (this.#matched.size < matchedTexts) this.#matched.keep(hash, text.length, matches, things);
  }

  /** Distinct things tagged, by kind. */
  distinct(): KindCounts {
    const counts = zeroCounts();
    for (const { kind } of this.#things) counts[kind] += 1;
    return counts;
  }

  /** `text` with every match replaced by its tag. */
  replace(text: string): string;
  replace(text: string | null): string | null;
  replace(text: string | null): string | null {
    if (!text) return text;
    const numbers = this.numbers();
    const matches = this.#matchesSeen(text) ?? findMatches(text, this.detectors);
    let out = '';
    let at = 0;
    for (const match of matches) {
      out += `${text.slice(at, match.start)}[${match.kind}-${this.numberOf(numbers, match)}]`;
      at = match.end;
    }
    return at === 0 ? text : out + text.slice(at);
  }

  /** The thing a match names, added when it is new (its key copied: see `detached`). */
  #thingOf(match: Match): number {
    const id = idOf(match);
    let index = this.#thingIndex.get(id);
    if (index === undefined) {
      const key = detached(match.key);
      index = this.#things.length;
      this.#things.push({ kind: match.kind, key });
      // The index's key built again from the copy: `id` may share the answer's memory too.
      this.#thingIndex.set(idOf({ kind: match.kind, key }), index);
    }
    return index;
  }

  /** The matches the first pass found in `text`; undefined when it did not keep them. */
  #matchesSeen(text: string): Match[] | undefined {
    const hash = hashOf(text);
    const kept = this.#matched.get(hash, text.length);
    if (kept) {
      const matches: Match[] = [];
      for (let i = 0; i < kept.length; i += 3) {
        const start = kept[i] as number;
        const end = kept[i + 1] as number;
        const { kind, key } = this.#things[kept[i + 2] as number] as Thing;
        if (keyOfSpan[kind](text.slice(start, end)) !== key) return undefined;
        matches.push({ kind, start, end, key });
      }
      return matches;
    }
    return this.#clean.has(hash >>> 0) ? [] : undefined;
  }

  /** The text's matches, from the recent texts or searched (and then kept among them). */
  #searched(text: string): Match[] {
    if (text.length > longText) return findMatches(text, this.detectors);
    let matches = this.#recent.get(text);
    if (matches) return matches;
    matches = findMatches(text, this.detectors);
    if (this.#recent.size >= recentTexts) {
      const oldest = this.#recent.keys().next().value;
      if (oldest !== undefined) this.#recent.delete(oldest);
    }
    this.#recent.set(text, matches);
    return matches;
  }

  private numbers(): Map<string, number> {
    if (this.#numbers) return this.#numbers;
    // The first pass is over: what only it used goes.
    this.#recent.clear();
    this.#matched.trim();
    const numbers = new Map<string, number>();
    for (const kind of tagKinds) {
      const ranked = this.#things
        .filter((thing) => thing.kind === kind)
        .map((thing) => ({
          id: idOf(thing),
          digest: keyedDigest(this.secret, ['tag', kind, thing.key]).toString('hex'),
        }))
        .sort((a, b) => (a.digest < b.digest ? -1 : a.digest > b.digest ? 1 : 0));
      for (const [index, { id }] of ranked.entries()) numbers.set(id, index + 1);
    }
    this.#numbers = numbers;
    return numbers;
  }

  /** A text not seen in the first pass still gets a tag: the next number of its kind. */
  private numberOf(numbers: Map<string, number>, match: Match): number {
    const id = idOf(match);
    let number = numbers.get(id);
    if (number === undefined) {
      number = [...numbers.keys()].filter((key) => key.startsWith(`${match.kind}\u0000`)).length + 1;
      numbers.set(id, number);
    }
    return number;
  }
}

/**
 * A copy of `text` that shares no memory with the string it was cut from: V8 cuts a substring
 * of 13 characters or more as a view of the whole text (a match's key of a long answer would
 * keep the answer alive). Concatenation makes a new string, which cutting then copies whole.
 */
function detached(text: string): string {
  return ` ${text}`.slice(1);
}

function idOf(match: { kind: TagKind; key: string }): string {
  return `${match.kind}\u0000${match.key}`;
}

/** A 53-bit hash of the text's UTF-16 code units (cyrb53); its low 32 bits are a hash too. */
function hashOf(text: string): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ unit, 2654435761);
    h2 = Math.imul(h2 ^ unit, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/**
 * Where each text's matches are, by the text's hash: one array of numbers, a text's entry
 * [length, count, then start, end and thing for each match], found by its offset through an
 * open-addressing table of hashes (12 bytes a slot, at most half of them used).
 */
class MatchTable {
  #hashes = new Float64Array(1024);
  #offsets = new Uint32Array(1024).fill(EMPTY);
  #size = 0;
  #data = new Uint32Array(4096);
  #used = 0;

  get size(): number {
    return this.#size;
  }

  keep(hash: number, length: number, matches: readonly Match[], things: readonly number[]): void {
    if (this.#slotOf(hash) !== -1) return;
    const need = 2 + 3 * matches.length;
    if (this.#used + need > this.#data.length) {
      const data = new Uint32Array(Math.max(Math.ceil(this.#data.length * 1.5), this.#used + need));
      data.set(this.#data.subarray(0, this.#used));
      this.#data = data;
    }
    const at = this.#used;
    this.#data[at] = length;
    this.#data[at + 1] = matches.length;
    matches.forEach((match, i) => {
      const slot = at + 2 + 3 * i;
      this.#data[slot] = match.start;
      this.#data[slot + 1] = match.end;
      this.#data[slot + 2] = things[i] as number;
    });
    this.#used += need;
    if ((this.#size + 1) * 2 > this.#offsets.length) this.#grow();
    this.#put(hash, at);
    this.#size += 1;
  }

  /** The text's [start, end, thing] triples, when a text of this hash and length was kept. */
  get(hash: number, length: number): Uint32Array | undefined {
    const slot = this.#slotOf(hash);
    if (slot === -1) return undefined;
    const at = this.#offsets[slot] as number;
    if (this.#data[at] !== length) return undefined;
    const count = this.#data[at + 1] as number;
    return this.#data.subarray(at + 2, at + 2 + 3 * count);
  }

  /** Once every text is kept: the entries' array cut to what they use. */
  trim(): void {
    this.#data = this.#data.slice(0, this.#used);
  }

  #slotOf(hash: number): number {
    const mask = this.#offsets.length - 1;
    for (let i = (hash >>> 0) & mask; ; i = (i + 1) & mask) {
      if (this.#offsets[i] === EMPTY) return -1;
      if (this.#hashes[i] === hash) return i;
    }
  }

  #put(hash: number, offset: number): void {
    const mask = this.#offsets.length - 1;
    let i = (hash >>> 0) & mask;
    while (this.#offsets[i] !== EMPTY) i = (i + 1) & mask;
    this.#hashes[i] = hash;
    this.#offsets[i] = offset;
  }

  #grow(): void {
    const hashes = this.#hashes;
    const offsets = this.#offsets;
    this.#hashes = new Float64Array(hashes.length * 2);
    this.#offsets = new Uint32Array(offsets.length * 2).fill(EMPTY);
    offsets.forEach((offset, i) => {
      if (offset !== EMPTY) this.#put(hashes[i] as number, offset);
    });
  }
}

/** An empty slot of MatchTable's (no entry starts there: the array is never 4 GiB). */
const EMPTY = 0xffffffff;

/** A set of 32-bit numbers in one typed array (open addressing): 4 to 8 bytes a number. */
class HashSet32 {
  #slots = new Uint32Array(1024);
  #size = 0;
  /** Whether 0, which marks an empty slot, is in the set. */
  #zero = false;

  add(value: number): void {
    if (value === 0) {
      this.#zero = true;
      return;
    }
    if ((this.#size + 1) * 2 > this.#slots.length) this.#grow();
    if (insert(this.#slots, value)) this.#size += 1;
  }

  has(value: number): boolean {
    if (value === 0) return this.#zero;
    const mask = this.#slots.length - 1;
    for (let i = value & mask; ; i = (i + 1) & mask) {
      const slot = this.#slots[i];
      if (slot === value) return true;
      if (slot === 0) return false;
    }
  }

  #grow(): void {
    const slots = new Uint32Array(this.#slots.length * 2);
    for (const value of this.#slots) if (value !== 0) insert(slots, value);
    this.#slots = slots;
  }
}

/** Puts `value` (not 0) in the first free slot from its own; false when it is there already. */
function insert(slots: Uint32Array, value: number): boolean {
  const mask = slots.length - 1;
  for (let i = value & mask; ; i = (i + 1) & mask) {
    const slot = slots[i];
    if (slot === value) return false;
    if (slot === 0) {
      slots[i] = value;
      return true;
    }
  }
}
