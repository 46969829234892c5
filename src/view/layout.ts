/**
 * What every viewer page shares: its URLs, built here from ids with encodeURIComponent, and
 * its frame (header, breadcrumb, keys). Every value from the data goes through `e` (HTML
 * escaping); the pages carry no inline script or style (the CSP forbids both).
 */

import { escapeHtml as e } from '../output/codecs/escape.ts';
import type { ViewData } from './dataset.ts';

export const paths = {
  home: () => '/',
  search: () => '/search',
  /** The CSV of a selection; its filter is the query string. */
  csv: () => '/responses.csv',
  study: (studyId: string) => `/study/${encodeURIComponent(studyId)}`,
  /** `query`: a filter's query string (filterQuery), kept while going hit to hit. */
  response: (responseId: string, query = '') => `/response/${encodeURIComponent(responseId)}${query}`,
  media: (responseId: string, turn: number, kind: string) =>
    kind === 'hls'
      ? `/media/${encodeURIComponent(responseId)}/${turn}/hls/index.m3u8`
      : `/media/${encodeURIComponent(responseId)}/${turn}/${encodeURIComponent(kind)}`,
  report: () => '/report',
};

export function page(
  data: ViewData,
  title: string,
  crumbs: readonly [string, string][],
  body: string,
): string {
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
<footer><p>Keys: <kbd>j</kbd>/<kbd>k</kbd> next/previous item, <kbd>Enter</kbd> open, <kbd>p</kbd> play or pause its recording, <kbd>/</kbd> search, <kbd>[</kbd>/<kbd>]</kbd> previous/next response (or hit), <kbd>u</kbd> up. Read-only: nothing here changes the run.</p></footer>
</body></html>
`;
}
