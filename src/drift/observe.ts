/**
 * What one run sees of a study's schema, gathered while its records stream past: per place,
 * each field's name and JSON types with a count, each question slot with its newest text, the
 * concepts, the URL parameter keys. Names and counts only (never values), and at most
 * MAX_NAMES of each list, so a study of any size costs the same few kilobytes.
 */
import { declaredKeys } from '../api/resources.ts';
import { compareInstants, parseTimestamp } from '../util/timestamp.ts';
import { type FieldPlace, type JsonType, jsonTypeOf, MAX_NAMES } from './schema.ts';

/** The keys the spec names at each place; anything else is a field it does not name. */
export const namedFields: Record<FieldPlace, readonly string[]> = {
  study: declaredKeys.study,
  response: declaredKeys.listedResponse,
  answer: declaredKeys.answer,
  detail: declaredKeys.singleResponse,
  transcript_row: declaredKeys.transcriptRow,
  video: ['stream_url', 'mp4_url'],
};

/**
 * How often a name was seen in a run, and at which record of its place last (1-based, in the
 * order the records passed): the records after that one went without it.
 */
export interface Seen {
  seen: number;
  last: number;
}

export interface ObservedField extends Seen {
  types: Set<JsonType>;
}

export interface ObservedSlot extends Seen {
  discussion_guide_question_id: string;
  concept_id: string | null;
  question: string;
  /** created_at of the newest response carrying `question` (ISO text, compared as instants). */
  question_at: string;
}

/** One run's sightings of a study's schema (compare.ts judges them against the recorded one). */
export class SchemaObserver {
  readonly records = new Map<FieldPlace, number>();
  readonly fields = new Map<FieldPlace, Map<string, ObservedField>>();
  /** Responses whose question slots were seen (those with answers_array). */
  questionSets = 0;
  readonly slots = new Map<string, ObservedSlot>();
  readonly concepts = new Set<string>();
  readonly attributes = new Map<string, Seen>();
  /** Lists that reached MAX_NAMES: "fields.<place>", "questions", "attributes", "concepts". */
  readonly saturated = new Set<string>();

  /** The study as the study list gave it. */
  study(payload: Record<string, unknown>): void {
    this.#record('study', payload);
  }

  /** A response: its list item and, when it was fetched, its detail. */
  response(listed: Record<string, unknown>, detail: Record<string, unknown> | null): void {
    this.#record('response', listed);
    const createdAt = typeof listed.created_at === 'string' ? listed.created_at : '';
    if (Array.isArray(listed.answers_array)) {
      this.questionSets += 1;
      const counted = new Set<string>();
      for (const answer of listed.answers_array) {
        if (!isObject(answer)) continue;
        this.#record('answer', answer);
        this.#slot(answer, createdAt, counted);
      }
    }
    if (isObject(listed.attributes)) {
      const at = this.records.get('response') ?? 0;
      for (const key of Object.keys(listed.attributes)) this.#count(this.attributes, key, at);
    }
    if (detail === null) return;
    this.#record('detail', detail);
    if (!Array.isArray(detail.transcript)) return;
    for (const row of detail.transcript) {
      if (!isObject(row)) continue;
      this.#record('transcript_row', row);
      this.#concept(row.concept_id);
      if (isObject(row.video)) this.#record('video', row.video);
    }
  }

  #record(place: FieldPlace, payload: Record<string, unknown>): void {
    const at = (this.records.get(place) ?? 0) + 1;
    this.records.set(place, at);
    let fields = this.fields.get(place);
    if (!fields) {
      fields = new Map();
      this.fields.set(place, fields);
    }
    for (const [name, value] of Object.entries(payload)) {
      let field = fields.get(name);
      if (!field) {
        if (fields.size >= MAX_NAMES) {
          this.saturated.add(`fields.${place}`);
          continue;
        }
        field = { seen: 0, last: 0, types: new Set() };
        fields.set(name, field);
      }
      field.seen += 1;
      field.last = at;
      field.types.add(jsonTypeOf(value));
    }
  }

  #slot(answer: Record<string, unknown>, createdAt: string, counted: Set<string>): void {
    const dgq = answer.discussion_guide_question_id;
    const concept = answer.concept_id;
    if (typeof dgq !== 'string' || !(typeof concept === 'string' || concept === null)) return;
    this.#concept(concept);
    const key = slotKey(dgq, concept);
    // A slot answered twice in one response is one sighting of it.
    if (counted.has(key)) return;
    counted.add(key);
    const question = typeof answer.question === 'string' ? answer.question : '';
    const slot = this.slots.get(key);
    if (!slot) {
      if (this.slots.size >= MAX_NAMES) {
        this.saturated.add('questions');
        return;
      }
      this.slots.set(key, {
        discussion_guide_question_id: dgq,
        concept_id: concept,
        seen: 1,
        last: this.questionSets,
        question,
        question_at: createdAt,
      });
      return;
    }
    slot.seen += 1;
    slot.last = this.questionSets;
    if (question !== slot.question && isLater(createdAt, slot.question_at)) {
      slot.question = question;
      slot.question_at = createdAt;
    }
  }

  #concept(concept: unknown): void {
    if (typeof concept !== 'string' || this.concepts.has(concept)) return;
    if (this.concepts.size >= MAX_NAMES) this.saturated.add('concepts');
    else this.concepts.add(concept);
  }

  #count(counts: Map<string, Seen>, key: string, at: number): void {
    const count = counts.get(key);
    if (count !== undefined) {
      count.seen += 1;
      count.last = at;
    } else if (counts.size >= MAX_NAMES) this.saturated.add('attributes');
    else counts.set(key, { seen: 1, last: at });
  }
}

/** The identity of a question slot: its discussion guide question and concept. */
export function slotKey(discussionGuideQuestionId: string, conceptId: string | null): string {
  return JSON.stringify([discussionGuideQuestionId, conceptId]);
}

/** `a` is a later instant than `b` (ISO text of any precision; unreadable text is never later). */
export function isLater(a: string, b: string): boolean {
  const at = parseTimestamp(a);
  const bt = parseTimestamp(b);
  if (at === null) return false;
  return bt === null || compareInstants(at, bt) > 0;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
