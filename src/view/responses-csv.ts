/**
 * The CSV of a viewer selection (/responses.csv?q=…&study=…): one row per selected response
 * with its study, status, modality and summary, one column per attribute key, one per
 * question (its concept named) and, for a search, the questions where the words are. Written
 * for spreadsheets like a run's wide sheets: a byte order mark, every text cell quoted, and
 * cells a spreadsheet would run as a formula escaped (load/csv.ts).
 */
import { questionLabel } from '../concept-name.ts';
import { byteOrderMark, type CsvCell, csvText } from '../output/formats/csv.ts';
import type { Row } from '../tables/index.ts';
import type { ViewData } from './dataset.ts';
import type { Hit, ResponseFilter } from './search.ts';

const fixed = [
  'study_id',
  'link_id',
  'response_id',
  'response_number',
  'created_at',
  'updated_at',
  'status',
  'modality',
  'summary',
] as const;

const options = { bom: true, escape_formulae: true, quoteText: true } as const;
/** Rows made CSV text at once: the file goes out in pieces, never whole in memory. */
const ROWS_PER_PIECE = 500;

interface QuestionColumn {
  key: string;
  header: string;
}

/** The selection's question slots (study, question, concept), by study then first position. */
function questionColumns(data: ViewData, hits: readonly Hit[], taken: Set<string>): QuestionColumn[] {
  const slots = new Map<string, { study: string; position: number; label: string }>();
  for (const { response } of hits)
    for (const answer of data.answers.get(response.response_id) ?? []) {
      const key = slotKey(answer);
      const slot = slots.get(key);
      if (!slot)
        slots.set(key, {
          study: response.link_id,
          position: answer.position,
          label: questionLabel(answer.question, answer.concept_id),
        });
      else slot.position = Math.min(slot.position, answer.position);
    }
  const studies = new Set([...slots.values()].map((slot) => slot.study));
  return [...slots.entries()]
    .sort(([, a], [, b]) => (a.study < b.study ? -1 : a.study > b.study ? 1 : a.position - b.position))
    .map(([key, slot]) => {
      const base = studies.size > 1 ? `${slot.study}: ${slot.label}` : slot.label;
      let header = base;
      for (let n = 2; taken.has(header); n++) header = `${base} (${n})`;
      taken.add(header);
      return { key, header };
    });
}

function slotKey(answer: Row<'answers'>): string {
  return JSON.stringify([answer.study_id, answer.discussion_guide_question_id, answer.concept_id]);
}

/** The CSV's pieces (text), the header first. */
export function* responsesCsv(
  data: ViewData,
  hits: readonly Hit[],
  filter: ResponseFilter,
): Generator<string> {
  const taken = new Set<string>(fixed);
  const keys = [
    ...new Set(hits.flatMap((h) => (data.attributes.get(h.response.response_id) ?? []).map((a) => a.key))),
  ]
    .sort()
    .map((key) => {
      let header = key;
      for (let n = 2; taken.has(header); n++) header = `${key} (${n})`;
      taken.add(header);
      return { key, header };
    });
  const questions = questionColumns(data, hits, taken);
  const withWords = filter.q !== '';
  const header = [
    ...fixed,
    ...keys.map((k) => k.header),
    ...questions.map((q) => q.header),
    ...(withWords ? ['words_found_in'] : []),
  ];
  yield byteOrderMark + csvText([header], options);
  for (let from = 0; from < hits.length; from += ROWS_PER_PIECE) {
    const records = hits.slice(from, from + ROWS_PER_PIECE).map((hit): CsvCell[] => {
      const r = hit.response;
      const attributes = new Map((data.attributes.get(r.response_id) ?? []).map((a) => [a.key, a.value]));
      const answers = new Map((data.answers.get(r.response_id) ?? []).map((a) => [slotKey(a), a.answer]));
      return [
        r.study_id,
        r.link_id,
        r.response_id,
        r.response_number,
        r.created_at,
        r.updated_at,
        r.summary ? 'complete' : 'in progress',
        r.modality,
        r.summary,
        ...keys.map((k) => attributes.get(k.key) ?? null),
        ...questions.map((q) => answers.get(q.key) ?? null),
        ...(withWords ? [hit.found.map((f) => f.where).join('\n')] : []),
      ];
    });
    yield csvText(records, options);
  }
}

/** The download's file name: the study's link_id or "search", made safe for any file system. */
export function csvFileName(data: ViewData, filter: ResponseFilter): string {
  const study = filter.study ? data.studies.find((s) => s.study_id === filter.study)?.link_id : null;
  const base = (study ?? 'search').replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 60) || 'study';
  return `responses-${base}.csv`;
}
