/**
 * The wide sheet of a study: one row per response, one column per question slot. Column
 * keys come from questionKey(); headers are the question texts, made distinct when two
 * slots share a text, so a spreadsheet never shows two columns under one name.
 */

import { type WideColumn, wideFixedColumns } from '../records.ts';
import { type Row, wideSheet } from '../tables/index.ts';
import { questionKey } from './questions.ts';

/** One column per question slot, by position, with distinct headers. */
export function wideColumns(questions: readonly Row<'questions'>[]): WideColumn[] {
  const ordered = [...questions].sort((a, b) => a.position - b.position);
  const textCounts = new Map<string, number>();
  for (const q of ordered) textCounts.set(q.question, (textCounts.get(q.question) ?? 0) + 1);

  const taken = new Set<string>([...wideFixedColumns, ...wideSheet.fixed.map((column) => column.header)]);
  return ordered.map((q) => {
    const shared = (textCounts.get(q.question) ?? 0) > 1 || taken.has(q.question);
    const base = shared ? `${q.question} [${slotLabel(q)}]` : q.question;
    const header = firstFree(base, taken);
    taken.add(header);
    return { key: questionKey(q.discussion_guide_question_id, q.concept_id), header };
  });
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
