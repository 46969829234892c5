/**
 * The wide sheet of a study: one row per response, one column per question slot, then one per
 * attribute key. Question column keys come from questionKey(); headers are the question texts,
 * made distinct when two slots share a text, so a spreadsheet never shows two columns under
 * one name. Attribute columns are headed by wideSheet.attributePrefix and the key, which no
 * question header starts with.
 */

import type { WideColumn, WideRow } from '../records.ts';
import { type Row, responseStatus, wideSheet } from '../tables/index.ts';

/** The identity of a question slot within a study; also the key of its wide column. */
export function questionKey(discussionGuideQuestionId: string, conceptId: string | null): string {
  return JSON.stringify([discussionGuideQuestionId, conceptId]);
}

/** One column per question slot, by position, then one per attribute key, all headers distinct. */
export function wideColumns(
  questions: readonly Row<'questions'>[],
  attributeKeys: readonly string[] = [],
): WideColumn[] {
  const ordered = [...questions].sort((a, b) => a.position - b.position);
  const textCounts = new Map<string, number>();
  for (const q of ordered) textCounts.set(q.question, (textCounts.get(q.question) ?? 0) + 1);

  const taken = new Set<string>(wideSheet.fixed.flatMap((column) => [column.key, column.header]));
  const columns: WideColumn[] = ordered.map((q) => {
    const shared = (textCounts.get(q.question) ?? 0) > 1 || taken.has(q.question);
    // The attribute columns' prefix stays theirs: such a question's label goes first.
    const base = q.question.startsWith(wideSheet.attributePrefix)
      ? `[${slotLabel(q)}] ${q.question}`
      : shared
        ? `${q.question} [${slotLabel(q)}]`
        : q.question;
    const header = firstFree(base, taken);
    taken.add(header);
    return { key: questionKey(q.discussion_guide_question_id, q.concept_id), header, of: 'question' };
  });
  for (const key of [...attributeKeys].sort()) {
    const header = firstFree(`${wideSheet.attributePrefix}${headerText(key)}`, taken);
    taken.add(header);
    columns.push({ key, header, of: 'attribute' });
  }
  return columns;
}

/** A key as header text: on one line, without control characters. */
function headerText(key: string): string {
  return key.replace(/[\u0000-\u001f\u007f]+/g, ' ');
}

/** The ids that tell two slots with the same text apart; stable across runs. */
function slotLabel(q: Row<'questions'>): string {
  return q.concept_id === null
    ? q.discussion_guide_question_id
    : `${q.discussion_guide_question_id} / ${q.concept_id}`;
}

function firstFree(base: string, taken: ReadonlySet<string>): string {
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) {
    const candidate = `${base} (${n})`;
    if (!taken.has(candidate)) return candidate;
  }
}

/**
 * The attribute keys of a study's responses, counted as they pass: the sheet's attribute
 * columns are the most frequent keys, at most wideSheet.maxAttributeColumns of them.
 */
export class AttributeKeys {
  readonly #counts = new Map<string, number>();

  /** One response's keys. */
  add(keys: Iterable<string>): void {
    for (const key of keys) this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
  }

  /** The keys that get a column (most frequent first, then by key), and how many did not. */
  chosen(limit: number = wideSheet.maxAttributeColumns): { keys: string[]; leftOut: number } {
    const ranked = [...this.#counts].sort(([ka, a], [kb, b]) => b - a || (ka < kb ? -1 : ka > kb ? 1 : 0));
    return { keys: ranked.slice(0, limit).map(([key]) => key), leftOut: Math.max(0, ranked.length - limit) };
  }
}

type Fixed = Omit<WideRow, 'cells' | 'attributes'>;

function fixedOf(row: Row<'responses'>): Fixed {
  return {
    response_id: row.response_id,
    response_number: row.response_number,
    created_at: row.created_at,
    updated_at: row.updated_at,
    status: responseStatus(row.summary),
    // A part written before the column existed holds none.
    modality: row.modality ?? null,
    summary: row.summary,
  };
}

/** A response's question and attribute cells, gathered from its answers and attributes rows. */
type Cells = Pick<WideRow, 'cells' | 'attributes'>;

/**
 * Wide rows from a study's table rows (current/'s parts, or a handoff's rows): answers and
 * attributes are gathered by response, then each response row becomes its wide row.
 */
export class WideRowBuilder {
  readonly #byResponse = new Map<string, Cells>();

  /** `keys` counts the attribute keys as they pass. */
  constructor(private readonly keys: AttributeKeys) {}

  #of(responseId: string): Cells {
    let own = this.#byResponse.get(responseId);
    if (!own) {
      // No prototype: a respondent's key may be "__proto__".
      own = { cells: {}, attributes: Object.create(null) as Record<string, string> };
      this.#byResponse.set(responseId, own);
    }
    return own;
  }

  answer(answer: Row<'answers'>): void {
    const { cells } = this.#of(answer.response_id);
    // Answers without a discussion guide question id came from the answers object: their slot is the key.
    const key = questionKey(answer.discussion_guide_question_id ?? answer.answer_id, answer.concept_id);
    cells[key] = key in cells ? `${cells[key]}\n${answer.answer}` : answer.answer;
  }

  attribute(attribute: Row<'attributes'>): void {
    this.#of(attribute.response_id).attributes[attribute.key] = attribute.value;
    this.keys.add([attribute.key]);
  }

  row(response: Row<'responses'>): WideRow {
    const own = this.#byResponse.get(response.response_id);
    return { ...fixedOf(response), cells: own?.cells ?? {}, attributes: own?.attributes ?? {} };
  }
}
