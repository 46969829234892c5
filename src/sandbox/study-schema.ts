/**
 * A study's questions, URL parameters and payload fields as the sandbox serves them: generated
 * from the seed, then changed the way the service would change them (a test's and a curious
 * user's control, `Sandbox.changeSchema`, `study-export sandbox --schema-change`):
 * - a question slot added, reworded or dropped is so for the responses that come after the
 *   change (the conversations held before it keep their questions);
 * - a URL parameter added (or dropped) is passed (or not) by the respondents who come after it;
 * - a field the spec does not name, once set, is in every payload of its place from then on,
 *   old responses' included (a new version of the service's serializer); set to a value of
 *   another JSON type, it is the same field with its type changed; unset, it is gone from all.
 */
import { ConfigError } from '../errors.ts';
import { stableHex } from './prng.ts';

export interface Question {
  questionId: string;
  dgqId: string;
  conceptId: string | null;
  text: string;
  /** Key of this question in the answers object (unique within the study). */
  answersKey: string;
}

/** Where a field is set: the study list's element, a response list item, a transcript row. */
export type FieldPlace = 'study' | 'response' | 'transcript_row';

/** A change of a study's schema, as the service would make it. */
export type StudySchemaChange =
  | {
      kind: 'add_question';
      question?: string;
      discussion_guide_question_id?: string;
      concept_id?: string | null;
    }
  /** position: 1-based, default 1. */
  | { kind: 'reword_question'; position?: number; question?: string }
  | { kind: 'drop_question'; position?: number }
  | { kind: 'add_url_parameter'; key?: string; value?: string }
  | { kind: 'drop_url_parameter'; key: string }
  | { kind: 'set_field'; place?: FieldPlace; name?: string; value?: unknown }
  | { kind: 'unset_field'; place?: FieldPlace; name?: string };

/** `study-export sandbox --schema-change`'s words for the changes it can make. */
const optionKinds: Record<string, StudySchemaChange> = {
  'add-question': { kind: 'add_question' },
  'reword-question': { kind: 'reword_question' },
  'add-url-parameter': { kind: 'add_url_parameter' },
  'add-field': { kind: 'set_field', name: 'sentiment_score', value: 0.5 },
  'retype-field': { kind: 'set_field', name: 'sentiment_score', value: 'positive' },
};

export interface SchemaChangeOption {
  /** The study's link_id or id; the first study otherwise. */
  study?: string;
  change: StudySchemaChange;
}

/** "add-question,reword-question:cars-2024" into changes; a wrong word is named with the right ones. */
export function parseSchemaChanges(spec: string): SchemaChangeOption[] {
  return spec
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const cut = part.indexOf(':');
      const word = cut < 0 ? part : part.slice(0, cut);
      const change = optionKinds[word];
      if (!change) {
        throw new ConfigError(
          `--schema-change: unknown change "${word}"; expected ${Object.keys(optionKinds).join(', ')}, each optionally followed by :LINK_ID`,
        );
      }
      return cut < 0 ? { change } : { study: part.slice(cut + 1), change };
    });
}

/** What a study's changes are so far. */
export interface StudyChanges {
  /** Each applies to the responses of this index and after. */
  questions: { from: number; apply: (questions: Question[]) => Question[] }[];
  /** A value is passed from then on; null: the parameter is no longer passed. */
  parameters: { from: number; key: string; value: string | null }[];
  fields: Record<FieldPlace, Record<string, unknown>>;
}

export function noChanges(): StudyChanges {
  return { questions: [], parameters: [], fields: { study: {}, response: {}, transcript_row: {} } };
}

/**
 * Records `change` for the responses from `nextIndex` on (the next one created); throws, naming
 * what is wrong, for a position the study does not have.
 */
export function addChange(changes: StudyChanges, change: StudySchemaChange, nextIndex: number): void {
  switch (change.kind) {
    case 'add_question': {
      const n = changes.questions.length + 1;
      changes.questions.push({
        from: nextIndex,
        apply: (questions) => [
          ...questions,
          {
            questionId: `q_added_${n}`,
            dgqId: change.discussion_guide_question_id ?? `dg-added-${n}`,
            conceptId: change.concept_id ?? null,
            text: change.question ?? `Would you recommend it to a friend? (added question ${n})`,
            answersKey: uniqueKey(
              questions,
              change.question ?? `Would you recommend it to a friend? (added question ${n})`,
            ),
          },
        ],
      });
      return;
    }
    case 'reword_question': {
      const position = change.position ?? 1;
      const text = change.question;
      changes.questions.push({
        from: nextIndex,
        apply: (questions) => {
          const target = questions[position - 1];
          if (!target) throw new Error(`sandbox: the study has no question at position ${position}`);
          const reworded = text ?? `${target.text} Tell us more.`;
          return questions.map((question, i) =>
            i === position - 1
              ? { ...question, text: reworded, answersKey: uniqueKey(questions, reworded) }
              : question,
          );
        },
      });
      return;
    }
    case 'drop_question': {
      const position = change.position ?? 1;
      changes.questions.push({
        from: nextIndex,
        apply: (questions) => {
          if (!questions[position - 1])
            throw new Error(`sandbox: the study has no question at position ${position}`);
          return questions.filter((_, i) => i !== position - 1);
        },
      });
      return;
    }
    case 'drop_url_parameter':
      changes.parameters.push({ from: nextIndex, key: change.key, value: null });
      return;
    case 'unset_field':
      delete changes.fields[change.place ?? 'response'][change.name ?? 'sentiment_score'];
      return;
    case 'add_url_parameter':
      changes.parameters.push({
        from: nextIndex,
        key: change.key ?? `campaign_${changes.parameters.length + 1}`,
        value: change.value ?? 'spring-newsletter',
      });
      return;
    case 'set_field':
      changes.fields[change.place ?? 'response'][change.name ?? 'sentiment_score'] = change.value ?? 0.5;
      return;
  }
}

/** The questions asked of response `index`. */
export function questionsOf(base: Question[], changes: StudyChanges | undefined, index: number): Question[] {
  if (!changes) return base;
  return changes.questions
    .filter((change) => change.from <= index)
    .reduce((qs, change) => change.apply(qs), base);
}

/** The URL parameters of response `index`: `generated`, with the changes made before it. */
export function parametersOf(
  generated: Record<string, string>,
  changes: StudyChanges | undefined,
  index: number,
): Record<string, string> {
  const parameters = { ...generated };
  for (const parameter of changes?.parameters ?? []) {
    if (parameter.from > index) continue;
    if (parameter.value === null) delete parameters[parameter.key];
    else parameters[parameter.key] = parameter.value;
  }
  return parameters;
}

/** The fields set at `place`, to add to its payloads. */
export function fieldsAt(changes: StudyChanges | undefined, place: FieldPlace): Record<string, unknown> {
  return changes?.fields[place] ?? {};
}

/** A key of the answers object for `text` that no other question of the study has. */
function uniqueKey(questions: Question[], text: string): string {
  const taken = new Set(questions.map((question) => question.answersKey));
  let key = text;
  for (let n = 2; taken.has(key); n++) key = `${text} (${n})`;
  return key;
}

/** The questions a generated study asks. */
export function questionsFor(seed: number, contentKey: string, topic: string): Question[] {
  const specs: Array<[string, string | null, string]> = [
    ['dg-1', null, `What first comes to mind when you think about ${topic}?`],
    ['dg-2', null, 'How do you do this today, step by step?'],
    ['dg-3', 'concept-a', 'What do you like or dislike about this concept?'],
    ['dg-3', 'concept-b', 'What do you like or dislike about this concept?'],
    ['dg-4', null, 'Which concept do you prefer, and why?'],
    ['dg-5', null, 'Anything else you would like to add?'],
  ];
  const seen = new Map<string, number>();
  return specs.map(([dgqId, conceptId, text], q) => {
    const count = (seen.get(text) ?? 0) + 1;
    seen.set(text, count);
    return {
      questionId: `q_${stableHex(12, seed, contentKey, 'question', q)}`,
      dgqId,
      conceptId,
      text,
      answersKey: count === 1 ? text : `${text} (${count})`,
    };
  });
}
