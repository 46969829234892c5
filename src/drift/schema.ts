/**
 * A study's observed schema, declared once: what the service's payloads of one study looked
 * like (field names and JSON types per place, question slots and their text, concepts, URL
 * parameter keys), never their values. It is small (names and counts) and kept in the study's
 * state entry, so the next run can say what changed on the service (compare.ts).
 */
import { z } from 'zod';

/** Where a field sits in the service's payloads (spec 2.1 to 2.5). */
export const fieldPlaces = ['study', 'response', 'answer', 'detail', 'transcript_row', 'video'] as const;
export type FieldPlace = (typeof fieldPlaces)[number];

/** What people read for a place. */
export const placeNames: Record<FieldPlace, string> = {
  study: 'study',
  response: 'response (list item)',
  answer: 'answer (answers_array element)',
  detail: 'response detail',
  transcript_row: 'transcript row',
  video: 'video object of a transcript row',
};

export const jsonTypes = ['string', 'number', 'boolean', 'null', 'object', 'array'] as const;
export type JsonType = (typeof jsonTypes)[number];

export function jsonTypeOf(value: unknown): JsonType {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  const type = typeof value;
  return type === 'string' || type === 'number' || type === 'boolean' ? type : 'object';
}

/**
 * How often something was seen: in `seen` of `of` records at its place, up to its last
 * sighting, and in none of the `missed` records at its place since (compare.ts isGone).
 */
const Sighting = z.object({
  seen: z.number().int().nonnegative(),
  of: z.number().int().nonnegative(),
  missed: z.number().int().nonnegative(),
});
export type Sighting = z.infer<typeof Sighting>;

const FieldSchema = Sighting.extend({ types: z.array(z.enum(jsonTypes)) });
export type FieldSchema = z.infer<typeof FieldSchema>;

const QuestionSlot = Sighting.extend({
  discussion_guide_question_id: z.string(),
  concept_id: z.string().nullable(),
  question: z.string(),
  /** created_at of the newest response that carried this text: an older one does not reword it back. */
  question_at: z.string(),
});
export type QuestionSlot = z.infer<typeof QuestionSlot>;

/** A study's schema as the state keeps it (state/<study id>.json, key `schema`). */
export const StudySchema = z.object({
  /** Records seen at each place over the runs that recorded this schema. */
  records: z.partialRecord(z.enum(fieldPlaces), z.number().int().nonnegative()),
  /** Per place, every field name seen (the spec's and others), with its JSON types. */
  fields: z.partialRecord(z.enum(fieldPlaces), z.record(z.string(), FieldSchema)),
  /** Responses whose question slots were seen (with answers_array): the slots' records. */
  question_sets: z.number().int().nonnegative(),
  questions: z.array(QuestionSlot),
  concepts: z.array(z.string()),
  /** URL parameter keys (a response's attributes); seen and of count responses. */
  attributes: z.record(z.string(), Sighting),
  /**
   * Lists that reached MAX_NAMES (a service or respondents with ever new names): their
   * additions and removals are not judged, only the types of the fields already known.
   */
  saturated: z.array(z.string()).optional(),
});
export type StudySchema = z.infer<typeof StudySchema>;

/** At most this many names are kept per place, for attributes and for question slots. */
export const MAX_NAMES = 200;

export const changeKinds = [
  'question_added',
  'question_gone',
  'question_reworded',
  'concept_added',
  'url_parameter_added',
  'url_parameter_gone',
  'field_added',
  'field_gone',
  'field_type_changed',
] as const;
export type ChangeKind = (typeof changeKinds)[number];

/**
 * One change of a study's schema since the last committed run: an entry of the manifest's
 * `schema_changes`, a `schema_change` log event, a line of the summary and of the guides.
 */
export interface SchemaChange {
  study_id: string;
  link_id: string;
  kind: ChangeKind;
  /** What changed, in one line for people (names quoted as JSON strings). */
  message: string;
  /** field_*: where the field sits, and its name. */
  place?: FieldPlace;
  field?: string;
  /** field_added, field_type_changed: its JSON types now; field_type_changed: before. */
  types?: JsonType[];
  previous_types?: JsonType[];
  /** question_*: the slot, and its text (question_reworded: the new text, and the old). */
  discussion_guide_question_id?: string;
  concept_id?: string | null;
  question?: string;
  previous_question?: string;
  /** url_parameter_*: the key. */
  parameter?: string;
}
