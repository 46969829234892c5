/**
 * One conversation as a dialogue: each turn with its question (its concept named), the
 * moderator's message, the respondent's reply and its recordings playable in place. Opened
 * from a list, its URL carries the list's filter: the words are marked in the replies and the
 * summary, the turns holding them are listed, and previous/next go to the list's other hits.
 */
import { questionLabel } from '../concept-name.ts';
import { escapeHtml as e } from '../output/codecs/escape.ts';
import type { Row } from '../tables/index.ts';
import type { ViewData } from './dataset.ts';
import { findTerms, markedHtml, queryTerms } from './highlight.ts';
import { page, paths } from './layout.ts';
import { filterQuery, isFiltered, type ResponseFilter, selectResponses } from './search.ts';

export async function conversationPage(
  data: ViewData,
  response: Row<'responses'>,
  origin: string,
  filter: ResponseFilter,
): Promise<string> {
  const study = data.studies.find((s) => s.study_id === response.study_id);
  const terms = queryTerms(filter.q);
  const said = (text: string) => markedHtml(text, findTerms(text, terms));
  const answers = new Map((data.answers.get(response.response_id) ?? []).map((a) => [a.answer_id, a]));
  const media = data.media.get(response.response_id) ?? [];
  const hitTurns: number[] = [];
  const turns = await Promise.all(
    (data.transcript.get(response.response_id) ?? []).map(async (turn) => {
      const answer = turn.answer_id ? answers.get(turn.answer_id) : undefined;
      const question = answer
        ? `<p class="question">Question ${answer.position}: ${e(questionLabel(answer.question, answer.concept_id))}</p>`
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
      const reply = turn.user ? said(turn.user) : '<em>(no reply)</em>';
      const hit = reply.includes('<mark>');
      if (hit) hitTurns.push(turn.turn);
      return `<li class="turn${hit ? ' hit' : ''}" id="turn-${turn.turn}" data-nav-item tabindex="-1" aria-label="Turn ${turn.turn}">
${question}<div class="moderator"><span class="who">Moderator</span><p class="said">${e(turn.moderator)}</p></div>
<div class="user"><span class="who">Respondent</span><p class="said">${reply}</p></div>
${players.join('')}${missing}</li>`;
    }),
  );
  const attributes = data.attributes.get(response.response_id) ?? [];
  const link = `${origin}${paths.response(response.response_id)}`;
  const summary = response.summary ? said(response.summary) : '';
  const body = `<h1>Response ${e(response.response_number === null ? response.response_id : `#${response.response_number}`)}</h1>
<dl class="meta"><dt>Study</dt><dd>${e(study?.title || response.link_id)}</dd>
<dt>Response id</dt><dd>${e(response.response_id)}</dd>
<dt>Created</dt><dd>${e(response.created_at)} UTC</dd>
<dt>Updated</dt><dd>${e(response.updated_at ?? '—')}</dd>
<dt>Modality</dt><dd>${e(response.modality)}</dd>
<dt>Status</dt><dd>${response.summary ? 'complete' : 'in progress (no summary yet)'}</dd>
${attributes.length ? `<dt>Attributes</dt><dd>${attributes.map((a) => `${e(a.key)} = ${e(a.value)}`).join('<br>')}</dd>` : ''}
${response.summary ? `<dt>Summary</dt><dd class="said">${summary}</dd>` : ''}
<dt>Link</dt><dd><a href="${e(paths.response(response.response_id))}">${e(link)}</a></dd></dl>
${pager(data, response, filter)}
${terms.length > 0 ? wordsFound(filter.q, hitTurns, summary.includes('<mark>')) : ''}
<h2>Conversation</h2>
<ol class="dialogue">${turns.join('\n')}</ol>`;
  const query = filterQuery(filter);
  return page(
    data,
    `Response ${response.response_number ?? response.response_id}`,
    [
      [paths.home(), 'Studies'],
      ...(isFiltered(filter) && !filter.study
        ? [[`${paths.search()}${query}`, 'Search'] as [string, string]]
        : [
            [
              `${paths.study(response.study_id)}${filterQuery(filter, ['study'])}`,
              study?.link_id ?? response.link_id,
            ] as [string, string],
          ]),
      [
        paths.response(response.response_id, query),
        `response ${response.response_number ?? response.response_id}`,
      ],
    ],
    body,
  );
}

/** Which turns hold the words, as links. */
function wordsFound(q: string, hitTurns: readonly number[], inSummary: boolean): string {
  const places = [
    ...hitTurns.map((turn) => `<a href="#turn-${turn}">turn ${turn}</a>`),
    ...(inSummary ? ['the summary'] : []),
  ];
  return `<p class="found-in">“${e(q)}”: ${places.length > 0 ? `marked in ${places.join(', ')}` : 'not in the replies (in an answer of this response)'}.</p>`;
}

/** Previous and next: the filtered list's hits when the page came from one, else the study's responses. */
function pager(data: ViewData, response: Row<'responses'>, filter: ResponseFilter): string {
  const link = (target: Row<'responses'> | undefined, rel: string, text: string, query: string) =>
    target ? `<a rel="${rel}" href="${e(paths.response(target.response_id, query))}">${text}</a>` : '';
  if (!isFiltered(filter)) {
    const siblings = data.responsesByStudy.get(response.study_id) ?? [];
    const index = siblings.findIndex((r) => r.response_id === response.response_id);
    return `<nav class="pager" aria-label="Responses">${link(siblings[index - 1], 'prev', '← previous response', '')} ${link(siblings[index + 1], 'next', 'next response →', '')}</nav>`;
  }
  const query = filterQuery(filter);
  const hits = selectResponses(data, filter);
  const index = hits.findIndex((hit) => hit.response.response_id === response.response_id);
  const where =
    index < 0
      ? 'This response is not one of the hits.'
      : `Hit ${index + 1} of ${hits.length}${filter.q ? ` for “${e(filter.q)}”` : ''}`;
  return `<nav class="pager" aria-label="Hits">${link(hits[index - 1]?.response, 'prev', '← previous hit', query)} <span class="position">${where}</span> ${link(index < 0 ? hits[0]?.response : hits[index + 1]?.response, 'next', 'next hit →', query)}</nav>`;
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
  return `<figure class="media media-${element}"><${element} controls preload="metadata" src="${src}" aria-label="${e(label)}" data-kind="${e(row.kind)}"></${element}><figcaption>${e(label)}, ${e(row.file ?? '')} (${row.bytes ?? '?'} bytes)${hls}</figcaption></figure>`;
}
