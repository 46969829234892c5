/**
 * Responses per segment for report.html: per attribute key (the URL parameters of the study
 * link: utm_source, lang…), how many responses have each value; and per modality, how many
 * are complete or in progress. Bounded for a study of any size: at most MAX_KEYS keys and
 * MAX_VALUES distinct values per key are counted one by one; values first seen past that
 * are counted together, and so are keys.
 */

export const MAX_KEYS = 40;
export const MAX_VALUES = 500;

export interface AttributeCounts {
  /** value -> responses. */
  values: Map<string, number>;
  /** Responses whose value came after MAX_VALUES distinct others. */
  untracked: number;
  /** Responses with this key. */
  responses: number;
}

export interface SegmentCounts {
  /** Attribute key -> its counts, for the first MAX_KEYS keys seen. */
  attributes: Map<string, AttributeCounts>;
  /** Attribute rows of keys past MAX_KEYS. */
  untrackedKeys: Set<string>;
  /** modality -> responses, and those still in progress. */
  modality: Map<string, { responses: number; inProgress: number }>;
}

export function emptySegments(): SegmentCounts {
  return { attributes: new Map(), untrackedKeys: new Set(), modality: new Map() };
}

/** One attributes row: one response's value for one key. */
export function countAttribute(segments: SegmentCounts, key: string, value: string): void {
  let counts = segments.attributes.get(key);
  if (!counts) {
    if (segments.attributes.size >= MAX_KEYS) {
      // Only their number is shown; a set of names is kept up to a bound.
      if (segments.untrackedKeys.size < MAX_VALUES) segments.untrackedKeys.add(key);
      return;
    }
    counts = { values: new Map(), untracked: 0, responses: 0 };
    segments.attributes.set(key, counts);
  }
  counts.responses += 1;
  const known = counts.values.get(value);
  if (known !== undefined) counts.values.set(value, known + 1);
  else if (counts.values.size < MAX_VALUES) counts.values.set(value, 1);
  else counts.untracked += 1;
}

/** One responses row. */
export function countModality(segments: SegmentCounts, modality: string, inProgress: boolean): void {
  const counts = segments.modality.get(modality) ?? { responses: 0, inProgress: 0 };
  counts.responses += 1;
  if (inProgress) counts.inProgress += 1;
  segments.modality.set(modality, counts);
}
