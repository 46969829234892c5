/**
 * The viewer's list pages, rendered on the server as plain HTML: the studies with a search
 * across all of them, the hits of a search, and a study's responses. Filters are the query
 * string (search.ts), so every list has a URL, and each response's link carries it on, so a
 * conversation opened from a list highlights the words and goes hit to hit.
 */

import { escapeHtml as e, shorten } from '../output/codecs/escape.ts';
import type { Row } from '../tables/index.ts';
import type { ViewData } from './dataset.ts';
import { snippetHtml } from './highlight.ts';
import { page, paths } from './layout.ts';
import { filterQuery, type Hit, hasRecording, type ResponseFilter, selectResponses } from './search.ts';

/** Hits listed on a page; the CSV has them all. */
export const LISTED_HITS = 200;
/** Snippets shown per hit. */
const SNIPPETS = 3;

export function studiesPage(data: ViewData): string {
  const rows = data.studies.map((study) => {
    const responses = data.responsesByStudy.get(study.study_id) ?? [];
    const inProgress = responses.filter((r) => !r.summary).length;
    const recorded = responses.filter((r) => hasRecording(data, r.response_id)).length;
    return `<tr data-nav-item tabindex="-1"><th scope="row" data-label="link_id"><a href="${e(paths.study(study.study_id))}">${e(study.link_id)}</a></th>
<td data-label="title">${e(study.title)}</td><td class="n" data-label="responses">${responses.length}</td><td class="n" data-label="in progress">${inProgress}</td><td class="n" data-label="with a recording">${recorded}</td><td data-label="created (UTC)">${e(study.created_at)}</td></tr>`;
  });
  const report = data.hasReport
    ? `<p><a href="${paths.report()}">The report of this ${data.kind === 'run' ? 'run' : 'dataset'}</a> (who answered, what people said, charts, warnings, rejects).</p>`
    : '';
  const empty: ResponseFilter = { q: '', study: '', attr: '', rec: '' };
  const body = `<h1>Studies</h1>${report}
${filterForm(data, empty, paths.search(), 'Search every study')}
<table class="list"><caption>${data.studies.length} studies</caption><thead><tr><th scope="col">link_id</th><th scope="col">title</th><th scope="col" class="n">responses</th><th scope="col" class="n">in progress</th><th scope="col" class="n">with a recording</th><th scope="col">created (UTC)</th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>`;
  return page(data, 'Studies', [[paths.home(), 'Studies']], body);
}

/** The hits of a search across studies (or the one its `study` names). */
export function searchPage(data: ViewData, filter: ResponseFilter): string {
  const hits = selectResponses(data, filter);
  const scope = filter.study ? (data.responsesByStudy.get(filter.study) ?? []).length : data.responses.size;
  const body = `<h1>Search</h1>
${filterForm(data, filter, paths.search(), 'Search')}
${hitTable(data, hits, scope, filter, true)}`;
  return page(
    data,
    filter.q ? `Search: ${filter.q}` : 'Search',
    [
      [paths.home(), 'Studies'],
      [`${paths.search()}${filterQuery(filter)}`, 'Search'],
    ],
    body,
  );
}

export function responsesPage(data: ViewData, study: Row<'studies'>, filter: ResponseFilter): string {
  const all = data.responsesByStudy.get(study.study_id) ?? [];
  const hits = selectResponses(data, { ...filter, study: study.study_id });
  const body = `<h1>${e(study.title || study.link_id)}</h1>
<p class="meta">${e(study.link_id)} · study id ${e(study.study_id)}</p>
${filterForm(data, filter, paths.study(study.study_id), 'Filter responses')}
${hitTable(data, hits, all.length, { ...filter, study: study.study_id }, false)}`;
  return page(
    data,
    study.title || study.link_id,
    [
      [paths.home(), 'Studies'],
      [paths.study(study.study_id), study.link_id],
    ],
    body,
  );
}

/** The form of a filter; on the search page it also picks the study. */
function filterForm(data: ViewData, filter: ResponseFilter, action: string, label: string): string {
  const isSearch = action === paths.search();
  const keys = new Set<string>();
  for (const studyId of isSearch ? data.studies.map((s) => s.study_id) : [filter.study])
    for (const response of data.responsesByStudy.get(studyId) ?? [])
      for (const a of data.attributes.get(response.response_id) ?? []) keys.add(a.key);
  const option = (value: string, text: string) =>
    `<option value="${e(value)}"${filter.rec === value ? ' selected' : ''}>${e(text)}</option>`;
  const studyChoice = isSearch
    ? `<label>Study <select name="study"><option value="">every study</option>${data.studies
        .map(
          (s) =>
            `<option value="${e(s.study_id)}"${filter.study === s.study_id ? ' selected' : ''}>${e(s.link_id)}</option>`,
        )
        .join('')}</select></label>`
    : '';
  return `<form class="filter" method="get" action="${e(action)}" role="search" aria-label="${e(label)}">
<label>Words in answers <input type="search" name="q" value="${e(filter.q)}" data-filter placeholder="all of these words, any order"></label>
${studyChoice}<label>Attribute <input type="text" name="attr" value="${e(filter.attr)}" placeholder="key=value" list="attr-keys"></label>
<datalist id="attr-keys">${[...keys].map((k) => `<option value="${e(k)}">`).join('')}</datalist>
<label>Recording <select name="rec">${option('', 'any or none')}${option('any', 'has a recording')}${option('audio', 'has audio')}${option('video', 'has video')}${option('none', 'has none')}</select></label>
<button type="submit">${isSearch ? 'Search' : 'Filter'}</button> <a href="${e(action)}">Clear</a></form>`;
}

function hitTable(data: ViewData, hits: Hit[], scope: number, filter: ResponseFilter, showStudy: boolean) {
  const query = filterQuery(filter);
  const listed = hits.slice(0, LISTED_HITS);
  const rows = listed.map((hit) => hitRow(data, hit, query, showStudy));
  const more =
    hits.length > listed.length
      ? `<p class="note">The first ${listed.length} are listed; the CSV has all ${hits.length}. More words narrow the search.</p>`
      : '';
  const csv =
    hits.length > 0
      ? `<p class="download"><a href="${e(paths.csv() + query)}" download>Download ${hits.length === 1 ? 'this response' : `these ${hits.length} responses`} as CSV</a></p>`
      : '';
  const studyHead = showStudy ? '<th scope="col">study</th>' : '';
  return `${csv}<table class="list"><caption>${hits.length} of ${scope} responses</caption>
<thead><tr><th scope="col">response</th>${studyHead}<th scope="col">created (UTC)</th><th scope="col">status</th><th scope="col" class="n">answers</th><th scope="col">recordings</th><th scope="col">attributes</th><th scope="col">${filter.q ? 'where the words are' : 'summary'}</th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>${more}`;
}

function hitRow(data: ViewData, hit: Hit, query: string, showStudy: boolean): string {
  const { response } = hit;
  const attributes = (data.attributes.get(response.response_id) ?? [])
    .map((a) => `${a.key}=${a.value}`)
    .join('; ');
  const turns = data.transcript.get(response.response_id) ?? [];
  const audio = turns.filter((t) => t.has_audio).length;
  const video = turns.filter((t) => t.has_video).length;
  const recordings =
    audio || video
      ? `${audio ? `${audio} audio` : ''}${audio && video ? ', ' : ''}${video ? `${video} video` : ''}`
      : 'none';
  const at = hit.found.find((f) => f.turn !== null)?.turn;
  const href = `${paths.response(response.response_id, query)}${at ? `#turn-${at}` : ''}`;
  const study = showStudy
    ? `<td data-label="study">${e(data.studies.find((s) => s.study_id === response.study_id)?.link_id ?? response.link_id)}</td>`
    : '';
  const found = hit.found
    .slice(0, SNIPPETS)
    .map(
      (f) =>
        `<li><span class="where">${e(f.where)}</span> <span class="snippet">${snippetHtml(f.text, f.ranges)}</span></li>`,
    );
  if (hit.found.length > SNIPPETS)
    found.push(`<li class="note">and ${hit.found.length - SNIPPETS} more</li>`);
  const text =
    hit.found.length > 0
      ? `<ul class="found">${found.join('')}</ul>`
      : e(shorten(response.summary ?? '', 100));
  return `<tr data-nav-item tabindex="-1"><th scope="row" data-label="response"><a href="${e(href)}">${e(response.response_number === null ? response.response_id : `#${response.response_number}`)}</a></th>${study}
<td data-label="created (UTC)">${e(response.created_at)}</td><td data-label="status">${response.summary ? 'complete' : 'in progress'}</td><td class="n" data-label="answers">${response.answer_count}</td>
<td data-label="recordings">${e(recordings)}</td><td data-label="attributes">${e(attributes)}</td><td class="text" data-label="${hit.found.length > 0 ? 'words' : 'summary'}">${text}</td></tr>`;
}
