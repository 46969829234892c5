/**
 * The service's resources (spec sections 2.1 to 2.5), declared once.
 *
 * Each schema is both the runtime validator and, through z.infer, the TypeScript type.
 * Objects are "loose": fields the real service may add are kept, never rejected, so that
 * they reach raw/*.jsonl.gz and the `extra` columns.
 */
import { z } from 'zod';
import { isTimestamp } from '../util/timestamp.ts';

/** A timestamp the service sends: ISO 8601, UTC when it names no zone (src/util/timestamp.ts). */
export const Timestamp = z.string().refine(isTimestamp, {
  message: 'expected an ISO 8601 timestamp',
});

/**
 * An object of strings keyed by the respondent's or the service's own names (attributes: URL
 * parameters; answers: question texts). Checked own key by own key, because zod's record skips
 * a key named "__proto__", which JSON.parse keeps as an own property and which is data here
 * like any other name (`constructor`, `toString`, ...).
 */
const StringMap = z.custom<Record<string, string>>().superRefine((value, context) => {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    const found = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
    context.addIssue({ code: 'custom', message: `expected an object of strings, received ${found}` });
    return;
  }
  for (const key of Object.keys(value)) {
    const inner = (value as Record<string, unknown>)[key];
    if (typeof inner !== 'string')
      context.addIssue({ code: 'custom', path: [key], message: `expected string, received ${typeof inner}` });
  }
});

/**
 * Validates a payload and returns it as received. The schemas only check (no defaults, no
 * transforms), and zod's output would be a copy that loses any key named "__proto__" (its
 * objects are built by assignment); the payload itself keeps every key as data.
 */
export function checked<T extends z.ZodType>(
  schema: T,
  payload: unknown,
): { success: true; data: z.infer<T> } | { success: false; error: z.ZodError } {
  const result = schema.safeParse(payload);
  return result.success
    ? { success: true, data: payload as z.infer<T> }
    : { success: false, error: result.error };
}

/** 2.1 Study, an element of GET /api/public/list_surveys. */
export const Study = z.looseObject({
  id: z.string().min(1),
  link_id: z.string().min(1),
  title: z.string(),
  created_at: Timestamp,
  desc: z.string(),
});
export type Study = z.infer<typeof Study>;

/** The <n> of a desc shaped "<title> (<n> Responses)" (spec 2.1), or null for any other shape. */
export function responseCountInDesc(desc: string): number | null {
  const match = /\((\d+) Responses?\)\s*$/.exec(desc);
  if (!match?.[1]) return null;
  const count = Number(match[1]);
  return Number.isSafeInteger(count) ? count : null;
}

/** 2.3 Answer, an element of answers_array. question_id is deprecated: kept, never used as a key. */
export const Answer = z.looseObject({
  answer_id: z.string().min(1),
  discussion_guide_question_id: z.string(),
  concept_id: z.string().nullable(),
  question_id: z.string().optional(),
  question: z.string(),
  answer: z.string(),
});
export type Answer = z.infer<typeof Answer>;

/** 2.2 Response, an element of GET /api/public/responses/{link_id}. */
export const ListedResponse = z.looseObject({
  id: z.string().min(1),
  // The spec's sample list payload omits these two although its field list names them.
  response_number: z.number().optional(),
  created_at: Timestamp,
  updated_at: Timestamp.optional(),
  // Summary plus one key per question; each value is everything the user said for it.
  answers: StringMap,
  // Tolerated when absent: the answers object then carries the answers (see transform).
  answers_array: z.array(Answer).optional(),
  attributes: StringMap,
  short_transcript: z.string(),
});
export type ListedResponse = z.infer<typeof ListedResponse>;

/** 2.5 Video object of a transcript row. */
export const Video = z.looseObject({
  stream_url: z.string().min(1),
  mp4_url: z.string().min(1),
});
export type Video = z.infer<typeof Video>;

/** 2.5 Transcript row. answer_id is null on rows that are not questions (intro messages). */
export const TranscriptRow = z.looseObject({
  moderator: z.string(),
  user: z.string(),
  discussion_guide_question_id: z.string(),
  concept_id: z.string().nullable(),
  answer_id: z.string().nullable(),
  audio: z.string().nullable(),
  video: Video.nullable(),
});
export type TranscriptRow = z.infer<typeof TranscriptRow>;

/** 2.4 Single response, the result of GET /api/public/responses/{link_id}/{response_id}. */
export const SingleResponse = z.looseObject({
  id: z.string().min(1),
  survey: z.string(),
  transcript: z.array(TranscriptRow),
});
export type SingleResponse = z.infer<typeof SingleResponse>;

/** The three operations, named as counters, raw files and errors name them. */
export type Operation = 'list_surveys' | 'list_responses' | 'get_response';

/** An answer's body as received, and the payload it parsed as. */
export interface ReceivedJson {
  bytes: Uint8Array;
  /** The payload these bytes parsed as. */
  of: unknown;
}

/** The keys each schema declares; anything else on a payload is an extra field. */
export const declaredKeys = {
  study: Object.keys(Study.shape),
  listedResponse: Object.keys(ListedResponse.shape),
  answer: Object.keys(Answer.shape),
  singleResponse: Object.keys(SingleResponse.shape),
  transcriptRow: Object.keys(TranscriptRow.shape),
} as const;

/** Fields of `record` that its schema does not declare, or null when there are none. */
export function extraFields(
  record: Record<string, unknown>,
  declared: readonly string[],
): Record<string, unknown> | null {
  // Built by definition, not assignment: an extra field named "__proto__" stays a field.
  const extra = Object.fromEntries(Object.entries(record).filter(([key]) => !declared.includes(key)));
  return Object.keys(extra).length > 0 ? extra : null;
}

/** Formats a zod error as one line naming each failing path, e.g. "transcript[3].audio: expected string". */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path
        .map((part, i) =>
          typeof part === 'number' ? `[${part}]` : i === 0 ? String(part) : `.${String(part)}`,
        )
        .join('');
      return `${path || '(root)'}: ${issue.message}`;
    })
    .join('; ');
}
