/**
 * The viewer's pages, rendered on the server as plain HTML: studies, a study's responses
 * (filtered by the query string, so every filter has a URL), and one conversation as a
 * dialogue with each turn's recordings. Every value from the data goes through `e` (HTML
 * escaping) and every URL is built here from ids with encodeURIComponent, so respondents'
 * text is only ever text. The pages carry no inline script or style (the CSP forbids both).
 */

import { escapeHtml as e, shorten } from '../load/svg-charts.ts';
import type { Row } from '../tables/index.ts';
import type { ViewData } from './dataset.ts';

export const paths = {
  home: () => '/',
  study: (studyId: string) => `/study/${encodeURIComponent(studyId)}`,
  response: (responseId: string) => `/response/${encodeURIComponent(responseId)}`,
  media: (responseId: string, turn: number, kind: string) =>
    kind === 'hls'
      ? `/media/${encodeURIComponent(responseId)}/${turn}/hls/index.m3u8`
      : `/media/${encodeURIComponent(responseId)}/${turn}/${encodeURIComponent(kind)}`,
  report: () => '/report',
};

function page(data: ViewData, title: string, crumbs: readonly [string, string][], body: string): string {
  const where =
    data.kind === 'run'
      ? `run ${data.runId}`
      : `current dataset${data.runId ? ` (newest part: run ${data.runId})` : ''}`;
  const trail = crumbs.map(([href, label]) => `<a href="${e(href)}">${e(label)}</a>`).join(' › ');
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(title)} · study-export view</title>
<link rel="stylesheet" href="/assets/viewer.css"><script src="/assets/viewer.js" defer></script></head>
<body><a class="skip" href="#main">Skip to content</a>
<header><p class="source">${e(data.pipeline)}: ${e(where)} <span class="loc">${e(data.location)}</span></p>
<nav aria-label="Breadcrumb">${trail}</nav></header>
<main id="main" tabindex="-1">${body}</main>
<footer><p>Keys: <kbd>j</kbd>/<kbd>k</kbd> next/previous item, <kbd>Enter</kbd> open, <kbd>p</kbd> play or pause its recording, <kbd>/</kbd> filter, <kbd>[</kbd>/<kbd>]</kbd> previous/next response, <kbd>u</kbd> up. Read-only: nothing here changes the run.</p></footer>
</body></html>
`;
}

export function studiesPage(data: ViewData): string {
  const rows = data.studies.map((study) => {
    const responses = data.responsesByStudy.get(study.study_id) ?? [];
    const inProgress = responses.filter((r) => !r.summary).length;
    const recorded = responses.filter((r) => hasRecording(data, r.response_id)).length;
    return `<tr data-nav-item tabindex="-1"><th scope="row"><a href="${e(paths.study(study.study_id))}">${e(study.link_id)}</a></th>
<td>${e(study.title)}</td><td class="n">${responses.length}</td><td class="n">${inProgress}</td><td class="n">${recorded}</td><td>${e(study.created_at)}</td></tr>`;
  });
  const report = data.hasReport
    ? `<p><a href="${paths.report()}">The report of this ${data.kind === 'run' ? 'run' : 'dataset'}</a> (charts, warnings, rejects).</p>`
    : '';
  const body = `<h1>Studies</h1>${report}
<table class="list"><caption>${data.studies.length} studies</caption><thead><tr><th scope="col">link_id</th><th scope="col">title</th><th scope="col" class="n">responses</th><th scope="col" class="n">in progress</th><th scope="col" class="n">with a recording</th><th scope="col">created (UTC)</th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>`;
  return page(data, 'Studies', [[paths.home(), 'Studies']], body);
}

export interface ResponseFilter {
  q: string;
  attr: string;
  rec: string;
}

function hasRecording(data: ViewData, responseId: string, kind: 'any' | 'audio' | 'video' = 'any'): boolean {
  return (data.transcript.get(responseId) ?? []).some((turn) =>
    kind === 'audio' ? turn.has_audio : kind === 'video' ? turn.has_video : turn.has_audio || turn.has_video,
  );
}

/** The text that matches `q` in a response, or null when nothing does. */
function match(data: ViewData, response: Row<'responses'>, q: string): string | null {
  const needle = q.toLowerCase();
  const texts = [
    ...(data.answers.get(response.response_id) ?? []).map((a) => a.answer),
    ...(data.transcript.get(response.response_id) ?? []).map((t) => t.user),
    response.summary ?? '',
  ];
  for (const text of texts) {
    const at = text.toLowerCase().indexOf(needle);
    if (at >= 0)
      return shorten(
        Array.from(text)
          .slice(Math.max(0, at - 40))
          .join(''),
        120,
      );
  }
  return null;
}

function matchesAttr(data: ViewData, responseId: string, attr: string): boolean {
  const [key, ...rest] = attr.split('=');
  const value = rest.length > 0 ? rest.join('=') : null;
  return (data.attributes.get(responseId) ?? []).some(
    (a) => a.key === (key ?? '').trim() && (value === null || a.value === value.trim()),
  );
}

export function responsesPage(data: ViewData, study: Row<'studies'>, filter: ResponseFilter): string {
  const all = data.responsesByStudy.get(study.study_id) ?? [];
  const shown: { response: Row<'responses'>; snippet: string | null }[] = [];
  for (const response of all) {
    const snippet = filter.q ? match(data, response, filter.q) : null;
    if (filter.q && snippet === null) continue;
    if (filter.attr && !matchesAttr(data, response.response_id, filter.attr)) continue;
    if (filter.rec === 'any' && !hasRecording(data, response.response_id)) continue;
    if (filter.rec === 'audio' && !hasRecording(data, response.response_id, 'audio')) continue;
    if (filter.rec === 'video' && !hasRecording(data, response.response_id, 'video')) continue;
    if (filter.rec === 'none' && hasRecording(data, response.response_id)) continue;
    shown.push({ response, snippet });
  }
  const keys = new Set<string>();
  for (const response of all)
    for (const a of data.attributes.get(response.response_id) ?? []) keys.add(a.key);
  const option = (value: string, label: string) =>
    `<option value="${value}"${filter.rec === value ? ' selected' : ''}>${label}</option>`;
  const form = `<form class="filter" method="get" role="search" aria-label="Filter responses">
<label>Text in answers <input type="search" name="q" value="${e(filter.q)}" data-filter></label>
<label>Attribute <input type="text" name="attr" value="${e(filter.attr)}" placeholder="key=value" list="attr-keys"></label>
<datalist id="attr-keys">${[...keys].map((k) => `<option value="${e(k)}">`).join('')}</datalist>
<label>Recording <select name="rec">${option('', 'any or none')}${option('any', 'has a recording')}${option('audio', 'has audio')}${option('video', 'has video')}${option('none', 'has none')}</select></label>
<button type="submit">Filter</button> <a href="${e(paths.study(study.study_id))}">Clear</a></form>`;
  const rows = shown.map(({ response, snippet }) => {
    const attributes = (data.attributes.get(response.response_id) ?? [])
      .map((a) => `${a.key}=${a.value}`)
      .join('; ');
    const turns = data.transcript.get(response.response_id) ?? [];
    const audio = turns.filter((t) => t.has_audio).length;
    const video = turns.filter((t) => t.has_video).length;
    return `<tr data-nav-item tabindex="-1"><th scope="row"><a href="${e(paths.response(response.response_id))}">${e(response.response_number === null ? response.response_id : `#${response.response_number}`)}</a></th>
<td>${e(response.created_at)}</td><td>${response.summary ? 'complete' : 'in progress'}</td><td class="n">${response.answer_count}</td>
<td>${audio || video ? e(`${audio ? `${audio} audio` : ''}${audio && video ? ', ' : ''}${video ? `${video} video` : ''}`) : 'none'}</td>
<td>${e(attributes)}</td><td class="text">${snippet === null ? e(shorten(response.summary ?? '', 100)) : `<mark>${e(snippet)}</mark>`}</td></tr>`;
  });
  const body = `<h1>${e(study.title || study.link_id)}</h1>
<p class="meta">${e(study.link_id)} · study id ${e(study.study_id)}</p>
${form}
<table class="list"><caption>${shown.length} of ${all.length} responses</caption>
<thead><tr><th scope="col">response</th><th scope="col">created (UTC)</th><th scope="col">status</th><th scope="col" class="n">answers</th><th scope="col">recordings</th><th scope="col">attributes</th><th scope="col">${filter.q ? 'matching text' : 'summary'}</th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>`;
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

export async function conversationPage(
  data: ViewData,
  response: Row<'responses'>,
  origin: string,
): Promise<string> {
  const study = data.studies.find((s) => s.study_id === response.study_id);
  const siblings = data.responsesByStudy.get(response.study_id) ?? [];
  const index = siblings.findIndex((r) => r.response_id === response.response_id);
  const previous = siblings[index - 1];
  const next = siblings[index + 1];
  const answers = new Map((data.answers.get(response.response_id) ?? []).map((a) => [a.answer_id, a]));
  const media = data.media.get(response.response_id) ?? [];
  const turns = await Promise.all(
    (data.transcript.get(response.response_id) ?? []).map(async (turn) => {
      const answer = turn.answer_id ? answers.get(turn.answer_id) : undefined;
      const question = answer
        ? `<p class="question">Question ${answer.position}: ${e(answer.question)}</p>`
        : turn.answer_id
          ? ''
          : '<p class="question">Introduction</p>';
      const players = await Promise.all(
        media.filter((m) => m.turn === turn.turn).map((m) => player(data, response.response_id, m)),
      );
      const expected = (turn.has_audio || turn.has_video) && players.length === 0;
      const missing = expected
        ? `<p class="note">The service had a ${turn.has_video ? 'video' : 'audio'} recording for this turn; ${data.kind === 'run' ? 'this run did not download it (media off, or an earlier run archived it).' : 'it was not downloaded.'}</p>`
        : '';
      return `<li class="turn" id="turn-${turn.turn}" data-nav-item tabindex="-1" aria-label="Turn ${turn.turn}">
${question}<div class="moderator"><span class="who">Moderator</span><p class="said">${e(turn.moderator)}</p></div>
<div class="user"><span class="who">Respondent</span><p class="said">${turn.user ? e(turn.user) : '<em>(no reply)</em>'}</p></div>
${players.join('')}${missing}</li>`;
    }),
  );
  const attributes = data.attributes.get(response.response_id) ?? [];
  const link = `${origin}${paths.response(response.response_id)}`;
  const nav = [
    previous ? `<a rel="prev" href="${e(paths.response(previous.response_id))}">← previous response</a>` : '',
    next ? `<a rel="next" href="${e(paths.response(next.response_id))}">next response →</a>` : '',
  ].join(' ');
  const body = `<h1>Response ${e(response.response_number === null ? response.response_id : `#${response.response_number}`)}</h1>
<dl class="meta"><dt>Study</dt><dd>${e(study?.title || response.link_id)}</dd>
<dt>Response id</dt><dd>${e(response.response_id)}</dd>
<dt>Created</dt><dd>${e(response.created_at)} UTC</dd>
<dt>Updated</dt><dd>${e(response.updated_at ?? '—')}</dd>
<dt>Modality</dt><dd>${e(response.modality)}</dd>
<dt>Status</dt><dd>${response.summary ? 'complete' : 'in progress (no summary yet)'}</dd>
${attributes.length ? `<dt>Attributes</dt><dd>${attributes.map((a) => `${e(a.key)} = ${e(a.value)}`).join('<br>')}</dd>` : ''}
${response.summary ? `<dt>Summary</dt><dd class="said">${e(response.summary)}</dd>` : ''}
<dt>Link</dt><dd><a href="${e(paths.response(response.response_id))}">${e(link)}</a></dd></dl>
<nav class="pager" aria-label="Responses">${nav}</nav>
<h2>Conversation</h2>
<ol class="dialogue">${turns.join('\n')}</ol>`;
  return page(
    data,
    `Response ${response.response_number ?? response.response_id}`,
    [
      [paths.home(), 'Studies'],
      [paths.study(response.study_id), study?.link_id ?? response.link_id],
      [paths.response(response.response_id), `response ${response.response_number ?? response.response_id}`],
    ],
    body,
  );
}

const kindLabel: Record<string, string> = { audio: 'Audio', video: 'Video (MP4)', hls: 'Video (HLS)' };

async function player(data: ViewData, responseId: string, row: Row<'media'>): Promise<string> {
  const label = `${kindLabel[row.kind] ?? row.kind} of turn ${row.turn}`;
  const located = await data.locate(row).catch((error: Error) => ({ reason: error.message }));
  if ('reason' in located)
    return `<p class="note">${e(label)}: cannot be played here: ${e(located.reason)}</p>`;
  if (located.entry.method !== 0)
    return `<p class="note">${e(label)}: cannot be played here: the zip entry is compressed, not stored</p>`;
  const src = e(paths.media(responseId, row.turn, row.kind));
  const element = row.kind === 'audio' ? 'audio' : 'video';
  const hls = row.kind === 'hls' ? ` <a href="${src}">playlist</a>` : '';
  return `<figure class="media"><${element} controls preload="metadata" src="${src}" aria-label="${e(label)}" data-kind="${e(row.kind)}"></${element}><figcaption>${e(label)}, ${e(row.file ?? '')} (${row.bytes ?? '?'} bytes)${hls}</figcaption></figure>`;
}
