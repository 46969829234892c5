/**
 * A labelled dataset, as the statistics packages' files (SPSS .sav, Stata .dta) hold one: named
 * variables with labels, of four kinds, and rows of values in the variables' order. The codecs
 * (../sav, ../dta) write it; what goes into it (which columns, names, labels) is decided above.
 *
 * Both formats declare every string's width, the row count and (Stata) the size of the long
 * strings before the first row, so the rows are measured as they are added (`Measure`) and
 * written afterwards, one at a time, from wherever they were kept.
 */

/** A value code and its label (Stata's and SPSS's value labels on a numeric variable). */
export interface ValueLabel {
  code: number;
  label: string;
}

export type LabelledVariable =
  /** Text of any length; empty when there is none. */
  | { kind: 'text'; name: string; label: string }
  /** A whole number, or missing (null). */
  | { kind: 'integer'; name: string; label: string }
  /** A time as milliseconds since 1970-01-01T00:00:00Z, or missing (null). */
  | { kind: 'time'; name: string; label: string }
  /** A number standing for one of its labels (status, modality), or missing (null). */
  | { kind: 'coded'; name: string; label: string; labels: readonly ValueLabel[] };

/** A value in a row: a string for text, a number (or null) for the others. */
export type LabelledValue = string | number | null;

export interface LabelledDataset {
  /**
   * The file's label (SPSS file label, 64 bytes; Stata data label, 80 characters): `label`
   * cut by each format to leave room for `labelEnd`, which is kept whole.
   */
  label: string;
  labelEnd: string;
  /** When the file was made (both formats stamp it in their header). */
  createdAt: Date;
  variables: readonly LabelledVariable[];
}

/** What a text variable's values were found to need. */
export interface TextExtent {
  /** The longest value, in UTF-8 bytes. */
  maxBytes: number;
  /** The longest piece of each part when values are cut into parts of at most `partBytes`. */
  partMaxBytes: number[];
  /** Values that are not empty, and their UTF-8 bytes together. */
  nonEmpty: number;
  totalBytes: number;
}

/** The extent of a dataset's rows: how many, and each text variable's (by variable index). */
export interface Measured {
  rows: number;
  text: ReadonlyMap<number, TextExtent>;
}

/**
 * The longest text one SPSS string variable holds here; a longer text is held by several
 * variables (its parts). SPSS's widest string is 32,767 bytes, but ReadStat (and so R's haven)
 * reads one byte less of a string that wide.
 */
export const SPSS_MAX_STRING_BYTES = 32766;

/** Measures rows as they are added, holding nothing of them. */
export class Measure implements Measured {
  rows = 0;
  readonly text = new Map<number, TextExtent>();
  readonly #textIndexes: number[];

  constructor(
    readonly variables: readonly LabelledVariable[],
    readonly partBytes: number = SPSS_MAX_STRING_BYTES,
  ) {
    this.#textIndexes = variables.flatMap((v, i) => (v.kind === 'text' ? [i] : []));
    for (const i of this.#textIndexes) this.text.set(i, emptyExtent());
  }

  add(row: readonly LabelledValue[]): void {
    this.rows++;
    for (const i of this.#textIndexes) {
      const value = row[i];
      if (typeof value === 'string') measureText(this.text.get(i)!, value, this.partBytes);
    }
  }
}

export const emptyExtent = (): TextExtent => ({ maxBytes: 0, partMaxBytes: [], nonEmpty: 0, totalBytes: 0 });

/** Adds one value to a text variable's extent. */
export function measureText(extent: TextExtent, value: string, partBytes = SPSS_MAX_STRING_BYTES): void {
  if (value === '') return;
  const bytes = Buffer.byteLength(value, 'utf8');
  extent.nonEmpty++;
  extent.totalBytes += bytes;
  if (bytes > extent.maxBytes) extent.maxBytes = bytes;
  const parts = bytes <= partBytes ? [bytes] : partLengths(Buffer.from(value, 'utf8'), partBytes);
  parts.forEach((length, part) => {
    if (length > (extent.partMaxBytes[part] ?? 0)) extent.partMaxBytes[part] = length;
  });
}

/** The lengths of `bytes` (UTF-8) cut into parts of at most `limit` bytes, never inside a character. */
export function partLengths(bytes: Uint8Array, limit: number): number[] {
  const lengths: number[] = [];
  let start = 0;
  while (start < bytes.length) {
    const end = utf8Boundary(bytes, Math.min(start + limit, bytes.length));
    lengths.push(end - start);
    start = end;
  }
  return lengths;
}

/** The last position at or before `end` that does not fall inside a UTF-8 character. */
export function utf8Boundary(bytes: Uint8Array, end: number): number {
  let at = end;
  // Continuation bytes are 10xxxxxx; a character starts at any other byte.
  while (at > 0 && at < bytes.length && ((bytes[at] ?? 0) & 0xc0) === 0x80) at--;
  return at;
}

/** `text` in at most `limit` UTF-8 bytes: whole, or cut at a character with an ellipsis. */
export function cutBytes(text: string, limit: number): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= limit) return bytes;
  const ellipsis = Buffer.from('…', 'utf8');
  return Buffer.concat([bytes.subarray(0, utf8Boundary(bytes, limit - ellipsis.length)), ellipsis]);
}

/** `text` in at most `limit` characters (code points): whole, or cut with an ellipsis. */
export function cutCharacters(text: string, limit: number): string {
  const characters = Array.from(text);
  return characters.length <= limit ? text : `${characters.slice(0, limit - 1).join('')}…`;
}
