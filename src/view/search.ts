/**
 * Which responses a viewer URL selects, and where the words were found. A filter is the query
 * string (q, study, attr, rec), so every list, its hits and its CSV have a URL. Words: a
 * response matches when each word of q (or "quoted phrase") is somewhere in its answers, its
 * summary or its replies outside the questions, in any order, compared folded (highlight.ts);
 * a word matches inside longer words ("price" finds "prices"). Each text that holds a word is
 * a hit's "found" piece, one answer each, naming its question.
 */
import { questionLabel } from '../concept-name.ts';
import type { Row } from '../tables/index.ts';
import type { ViewData } from './dataset.ts';
import { findTerms, fold, queryTerms, type Range } from './highlight.ts';

export interface ResponseFilter {
  /** Words to find. */
  q: string;
  /** A study id, or '' for every study. */
  study: string;
  /** "key" or "key=value". */
  attr: string;
  /** '', any, audio, video, none. */
  rec: string;
}

const filterKeys = ['q', 'study', 'attr', 'rec'] as const;

export function filterOf(query: URLSearchParams, study = ''): ResponseFilter {
  return {
    q: query.get('q')?.trim() ?? '',
    study: query.get('study') ?? study,
    attr: query.get('attr')?.trim() ?? '',
    rec: query.get('rec') ?? '',
  };
}

/** "?q=…&study=…" with the filter's set parts, or '' for none. */
export function filterQuery(
  filter: ResponseFilter,
  omit: readonly (typeof filterKeys)[number][] = [],
): string {
  const query = new URLSearchParams();
  for (const key of filterKeys) if (filter[key] !== '' && !omit.includes(key)) query.set(key, filter[key]);
  const text = query.toString();
  return text === '' ? '' : `?${text}`;
}

export function isFiltered(filter: ResponseFilter): boolean {
  return filter.q !== '' || filter.attr !== '' || filter.rec !== '';
}

/** One text of a response that holds a word. */
export interface Found {
  /** What it answers: "Question 3: … (concept A)", "Summary", "Turn 1 (not a question)". */
  where: string;
  text: string;
  ranges: Range[];
  /** The transcript turn to open it at, when there is one. */
  turn: number | null;
}

export interface Hit {
  response: Row<'responses'>;
  /** Texts holding a word, those with the most distinct words first; empty without words. */
  found: Found[];
}

/** The responses `filter` selects, in study order then response order, with what matched. */
export function selectResponses(data: ViewData, filter: ResponseFilter): Hit[] {
  const terms = queryTerms(filter.q);
  const studies = filter.study ? data.studies.filter((s) => s.study_id === filter.study) : data.studies;
  const hits: Hit[] = [];
  for (const study of studies) {
    for (const response of data.responsesByStudy.get(study.study_id) ?? []) {
      if (filter.attr && !matchesAttr(data, response.response_id, filter.attr)) continue;
      if (!matchesRecording(data, response.response_id, filter.rec)) continue;
      if (terms.length === 0) {
        hits.push({ response, found: [] });
        continue;
      }
      const found = matchWords(data, response, terms);
      if (found) hits.push({ response, found });
    }
  }
  return hits;
}

interface Source {
  row: object;
  where: string;
  text: string;
  turn: number | null;
}

/** The texts of a response searched for words. */
function sources(data: ViewData, response: Row<'responses'>): Source[] {
  const turns = data.transcript.get(response.response_id) ?? [];
  const firstTurn = new Map<string, number>();
  for (const turn of turns)
    if (turn.answer_id && !firstTurn.has(turn.answer_id)) firstTurn.set(turn.answer_id, turn.turn);
  const list: Source[] = (data.answers.get(response.response_id) ?? []).map((answer) => ({
    row: answer,
    where: `Question ${answer.position}: ${questionLabel(answer.question, answer.concept_id)}`,
    text: answer.answer,
    turn: firstTurn.get(answer.answer_id) ?? null,
  }));
  if (response.summary) list.push({ row: response, where: 'Summary', text: response.summary, turn: null });
  // Replies outside the questions (introduction, closing) are in no answer.
  for (const turn of turns)
    if (!turn.answer_id && turn.user)
      list.push({ row: turn, where: `Turn ${turn.turn} (not a question)`, text: turn.user, turn: turn.turn });
  return list;
}

/** Folded texts, made on first search and kept with their rows. */
const foldedTexts = new WeakMap<object, string>();

function folded(source: Source): string {
  let text = foldedTexts.get(source.row);
  if (text === undefined) {
    text = fold(source.text);
    foldedTexts.set(source.row, text);
  }
  return text;
}

/** The texts holding a word when every word is somewhere in the response; null otherwise. */
function matchWords(data: ViewData, response: Row<'responses'>, terms: readonly string[]): Found[] | null {
  const seen = new Set<string>();
  const holding: { source: Source; count: number }[] = [];
  for (const source of sources(data, response)) {
    const text = folded(source);
    const here = terms.filter((term) => text.includes(term));
    if (here.length === 0) continue;
    for (const term of here) seen.add(term);
    holding.push({ source, count: here.length });
  }
  if (seen.size < terms.length) return null;
  return holding
    .sort((a, b) => b.count - a.count)
    .map(({ source }) => ({
      where: source.where,
      text: source.text,
      ranges: findTerms(source.text, terms),
      turn: source.turn,
    }));
}

function matchesAttr(data: ViewData, responseId: string, attr: string): boolean {
  const [key, ...rest] = attr.split('=');
  const value = rest.length > 0 ? rest.join('=') : null;
  return (data.attributes.get(responseId) ?? []).some(
    (a) => a.key === (key ?? '').trim() && (value === null || a.value === value.trim()),
  );
}

export function hasRecording(
  data: ViewData,
  responseId: string,
  kind: 'any' | 'audio' | 'video' = 'any',
): boolean {
  return (data.transcript.get(responseId) ?? []).some((turn) =>
    kind === 'audio' ? turn.has_audio : kind === 'video' ? turn.has_video : turn.has_audio || turn.has_video,
  );
}

function matchesRecording(data: ViewData, responseId: string, rec: string): boolean {
  if (rec === 'any' || rec === 'audio' || rec === 'video') return hasRecording(data, responseId, rec);
  if (rec === 'none') return !hasRecording(data, responseId);
  return true;
}
