/**
 * What changed in a study's schema between the last committed run and this one, and the
 * schema to record once this run is committed. Pure: the recorded schema (state) and this
 * run's sightings (observe.ts) in, the changes and the next schema out.
 *
 * A run sees only the responses it exports (an incremental run: those changed since the last),
 * so what it does not see is judged with care:
 * - a place (the study, responses, transcript rows...) this run saw no record of says nothing;
 *   one seen for the first time is recorded, not reported (as a study's first run is);
 * - something is gone only when the records since it was last seen (in the order they came,
 *   this run's after its last sighting and earlier runs' since) are enough that, at the rate it
 *   appeared, missing it in all of them by chance is under 1 in 100; something that was
 *   in every one of at least 3 records is gone at the first record without it. So a question
 *   dropped from the guide is gone once the newest responses lack it, though the older ones an
 *   incremental run exports again still carry it;
 * - a question is reworded only by a response newer than the one whose text was recorded;
 * - a field's type changed when a JSON type other than null appears that it never had (null
 *   alone is absence, not a type: concept_id is null on general questions).
 */
import {
  isLater,
  namedFields,
  type ObservedField,
  type SchemaObserver,
  type Seen,
  slotKey,
} from './observe.ts';
import {
  type FieldPlace,
  type FieldSchema,
  fieldPlaces,
  type JsonType,
  MAX_NAMES,
  placeNames,
  type QuestionSlot,
  type SchemaChange,
  type Sighting,
  type StudySchema,
} from './schema.ts';

/** The chance of missing, by luck, something still there, under which it is called gone. */
const GONE_CHANCE = 0.01;
/** Records that all carried something before one without it says it is gone. */
const ALWAYS_SEEN = 3;

export interface StudyNames {
  study_id: string;
  link_id: string;
}

export interface Compared {
  changes: SchemaChange[];
  /** The schema to record for the study once the run is committed. */
  next: StudySchema;
}

export function compareSchema(
  study: StudyNames,
  previous: StudySchema | undefined,
  observed: SchemaObserver,
): Compared {
  const before = previous ?? emptySchema();
  const changes: SchemaChange[] = [];
  const change = (entry: Omit<SchemaChange, 'study_id' | 'link_id'>) =>
    changes.push({ study_id: study.study_id, link_id: study.link_id, ...entry });
  // A study's first run records its schema and reports nothing.
  const judge = previous !== undefined;
  const saturated = new Set([...(before.saturated ?? []), ...observed.saturated]);
  const next: StudySchema = {
    records: {},
    fields: {},
    question_sets: before.question_sets + observed.questionSets,
    questions: compareQuestions(before, observed, judge && !saturated.has('questions'), change),
    concepts: compareConcepts(before, observed, judge && !saturated.has('concepts'), change),
    attributes: compareAttributes(before, observed, judge && !saturated.has('attributes'), change),
  };
  for (const place of fieldPlaces) {
    const seenNow = observed.records.get(place) ?? 0;
    const seenBefore = before.records[place] ?? 0;
    if (seenBefore + seenNow > 0) next.records[place] = seenBefore + seenNow;
    const fields = compareFields(place, before.fields[place] ?? {}, observed, {
      judge: judge && seenBefore > 0,
      names: !saturated.has(`fields.${place}`),
      change,
    });
    if (Object.keys(fields).length > 0) next.fields[place] = fields;
  }
  if (saturated.size > 0) next.saturated = [...saturated].sort();
  return { changes, next };
}

export function emptySchema(): StudySchema {
  return { records: {}, fields: {}, question_sets: 0, questions: [], concepts: [], attributes: {} };
}

/**
 * Whether something last seen in `seen` of `of` records, and in none of the `missed` records
 * since, is gone (see the top of this file).
 */
export function isGone({ seen, of, missed }: Sighting): boolean {
  if (missed === 0 || seen === 0) return false;
  if (seen >= of && of >= ALWAYS_SEEN) return true;
  // Its rate over every record since it was first seen, the misses included: an estimate that
  // only falls as misses come (one seen fewer than 5 times is never called gone this way), and
  // that a response exported again, and counted again, cannot push into a false "gone".
  const rate = seen / (of + missed + 1);
  return (1 - rate) ** missed < GONE_CHANCE;
}

type Report = (entry: Omit<SchemaChange, 'study_id' | 'link_id'>) => void;

const never: Sighting = { seen: 0, of: 0, missed: 0 };

/**
 * A sighting carried on through this run's `records`: missed by all of them (`now` null), or
 * seen, up to its last record, and missed by those after it (they came later: a question
 * dropped from the guide is still in the older responses an incremental run exports again).
 */
function carried(previous: Sighting, now: Seen | null | undefined, records: number): Sighting {
  if (!now) return { seen: previous.seen, of: previous.of, missed: previous.missed + records };
  return {
    seen: previous.seen + now.seen,
    of: previous.of + previous.missed + now.last,
    missed: records - now.last,
  };
}

function compareFields(
  place: FieldPlace,
  before: Record<string, FieldSchema>,
  observed: SchemaObserver,
  rules: { judge: boolean; names: boolean; change: Report },
): Record<string, FieldSchema> {
  const records = observed.records.get(place) ?? 0;
  // This run saw no record here: it says nothing of the place.
  if (records === 0) return before;
  const seenNow = observed.fields.get(place) ?? new Map<string, ObservedField>();
  const unnamed = (name: string) => !namedFields[place].includes(name);
  const next: Record<string, FieldSchema> = {};
  for (const [name, field] of seenNow) {
    const types = [...field.types].sort();
    const prior = Object.hasOwn(before, name) ? before[name] : undefined;
    if (!prior) {
      if (rules.judge && rules.names && unnamed(name)) {
        rules.change({
          kind: 'field_added',
          message: `field the spec does not name added to the ${placeNames[place]}: ${quoted(name)} (${types.join(' or ')})`,
          place,
          field: name,
          types,
        });
      }
      next[name] = { ...carried(never, field, records), types };
      continue;
    }
    const sighting = carried(prior, field, records);
    if (sighting.missed > 0 && isGone(sighting)) {
      fieldGone(place, name, prior, rules);
      continue;
    }
    const had = solid(prior.types);
    const now = solid(types);
    if (rules.judge && had.length > 0 && now.some((type) => !had.includes(type))) {
      rules.change({
        kind: 'field_type_changed',
        message: `field ${quoted(name)} of the ${placeNames[place]} changed type: ${had.join(' or ')} → ${now.join(' or ')}`,
        place,
        field: name,
        types,
        previous_types: prior.types,
      });
    }
    // The types this run saw speak for the field; null alone leaves the earlier ones.
    const nextTypes = now.length > 0 ? types : [...new Set([...prior.types, ...types])].sort();
    next[name] = { ...sighting, types: nextTypes };
  }
  for (const [name, prior] of Object.entries(before)) {
    if (seenNow.has(name)) continue;
    const sighting = carried(prior, null, records);
    if (!isGone(sighting)) next[name] = { ...sighting, types: prior.types };
    else fieldGone(place, name, prior, rules);
  }
  return next;
}

/** A field no longer sent: reported when the spec does not name it. */
function fieldGone(
  place: FieldPlace,
  name: string,
  prior: FieldSchema,
  rules: { judge: boolean; names: boolean; change: Report },
): void {
  if (!rules.judge || !rules.names || namedFields[place].includes(name)) return;
  rules.change({
    kind: 'field_gone',
    message: `field the spec does not name gone from the ${placeNames[place]}: ${quoted(name)}`,
    place,
    field: name,
    previous_types: prior.types,
  });
}

function compareQuestions(
  before: StudySchema,
  observed: SchemaObserver,
  judge: boolean,
  change: Report,
): QuestionSlot[] {
  const records = observed.questionSets;
  if (records === 0) return before.questions;
  const judged = judge && before.question_sets > 0;
  const priorByKey = new Map(
    before.questions.map((slot) => [slotKey(slot.discussion_guide_question_id, slot.concept_id), slot]),
  );
  const next: QuestionSlot[] = [];
  for (const [key, slot] of observed.slots) {
    const where = {
      discussion_guide_question_id: slot.discussion_guide_question_id,
      concept_id: slot.concept_id,
    };
    const prior = priorByKey.get(key);
    if (!prior) {
      if (judged) {
        change({
          kind: 'question_added',
          message: `question added: ${quoted(shorten(slot.question))} (${slotName(slot)})`,
          ...where,
          question: slot.question,
        });
      }
      next.push({
        ...where,
        ...carried(never, slot, records),
        question: slot.question,
        question_at: slot.question_at,
      });
      continue;
    }
    const sighting = carried(prior, slot, records);
    if (sighting.missed > 0 && isGone(sighting)) {
      if (judged) questionGone(prior, change);
      continue;
    }
    const reworded = slot.question !== prior.question && isLater(slot.question_at, prior.question_at);
    if (reworded && judged) {
      change({
        kind: 'question_reworded',
        message: `question reworded (${slotName(slot)}): ${quoted(shorten(prior.question))} → ${quoted(shorten(slot.question))}`,
        ...where,
        question: slot.question,
        previous_question: prior.question,
      });
    }
    const text = reworded
      ? { question: slot.question, question_at: slot.question_at }
      : {
          question: prior.question,
          question_at:
            slot.question === prior.question && isLater(slot.question_at, prior.question_at)
              ? slot.question_at
              : prior.question_at,
        };
    next.push({ ...where, ...sighting, ...text });
  }
  for (const [key, prior] of priorByKey) {
    if (observed.slots.has(key)) continue;
    const sighting = carried(prior, null, records);
    if (!isGone(sighting)) next.push({ ...prior, ...sighting });
    else if (judged) questionGone(prior, change);
  }
  return next.slice(0, MAX_NAMES);
}

function questionGone(prior: QuestionSlot, change: Report): void {
  change({
    kind: 'question_gone',
    message: `question gone: ${quoted(shorten(prior.question))} (${slotName(prior)})`,
    discussion_guide_question_id: prior.discussion_guide_question_id,
    concept_id: prior.concept_id,
    question: prior.question,
  });
}

function compareConcepts(
  before: StudySchema,
  observed: SchemaObserver,
  judge: boolean,
  change: Report,
): string[] {
  const known = new Set(before.concepts);
  // Concepts are known once responses were seen: before that, none is new.
  const judged = judge && (before.records.response ?? 0) > 0;
  for (const concept of observed.concepts) {
    if (known.has(concept)) continue;
    if (judged)
      change({ kind: 'concept_added', message: `concept added: ${quoted(concept)}`, concept_id: concept });
    known.add(concept);
  }
  return [...known].slice(0, MAX_NAMES);
}

function compareAttributes(
  before: StudySchema,
  observed: SchemaObserver,
  judge: boolean,
  change: Report,
): Record<string, Sighting> {
  const records = observed.records.get('response') ?? 0;
  if (records === 0) return before.attributes;
  const judged = judge && (before.records.response ?? 0) > 0;
  const next: Record<string, Sighting> = {};
  const gone = (key: string) => {
    if (judged)
      change({ kind: 'url_parameter_gone', message: `URL parameter gone: ${quoted(key)}`, parameter: key });
  };
  for (const [key, seen] of observed.attributes) {
    const prior = Object.hasOwn(before.attributes, key) ? before.attributes[key] : undefined;
    if (!prior) {
      if (judged)
        change({
          kind: 'url_parameter_added',
          message: `URL parameter added: ${quoted(key)}`,
          parameter: key,
        });
      next[key] = carried(never, seen, records);
      continue;
    }
    const sighting = carried(prior, seen, records);
    if (sighting.missed > 0 && isGone(sighting)) gone(key);
    else next[key] = sighting;
  }
  for (const [key, prior] of Object.entries(before.attributes)) {
    if (observed.attributes.has(key)) continue;
    const sighting = carried(prior, null, records);
    if (!isGone(sighting)) next[key] = sighting;
    else gone(key);
  }
  return next;
}

/** The types other than null. */
function solid(types: readonly JsonType[]): JsonType[] {
  return types.filter((type) => type !== 'null');
}

function slotName(slot: { discussion_guide_question_id: string; concept_id: string | null }): string {
  const concept = slot.concept_id === null ? '' : `, concept ${quoted(slot.concept_id)}`;
  return `discussion guide question ${quoted(slot.discussion_guide_question_id)}${concept}`;
}

/** Text from the service in a message: as a JSON string, so no line break or control character passes. */
function quoted(text: string): string {
  return JSON.stringify(text);
}

function shorten(text: string): string {
  const chars = [...text];
  return chars.length <= 120 ? text : `${chars.slice(0, 119).join('')}…`;
}
