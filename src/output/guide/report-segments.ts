/**
 * report.html's "Who answered": a study's responses split by modality (complete and in
 * progress) and by each attribute key, the most frequent values first. Capped: the top
 * TOP_VALUES values of a key are listed, the rest summed in one row; a key whose every value
 * is different (a participant id) is named, not split.
 */

import { escapeHtml as e } from '../codecs/escape.ts';
import { numberTable } from './report-table.ts';
import type { StudyStats } from './run-stats.ts';
import { type AttributeCounts, MAX_VALUES } from './segment-counts.ts';

/** Values listed per attribute key; the others are summed in one row. */
export const TOP_VALUES = 10;

export function segmentsSection(stats: StudyStats, id: string): string {
  const parts = [`<h3 id="${id}-who">Who answered: responses by modality and by attribute</h3>`];
  const modality = [...stats.segments.modality.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
  if (modality.length > 0)
    parts.push(
      numberTable(
        'Responses by modality (text, audio or video)',
        ['modality', 'responses', 'complete', 'in progress'],
        modality.map(([name, c]) => [name, c.responses, c.responses - c.inProgress, c.inProgress]),
      ),
    );
  const keys = [...stats.segments.attributes.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
  if (keys.length === 0) parts.push('<p>No response has attributes (URL parameters of the study link).</p>');
  else
    parts.push(
      '<p class="note">Attributes are the URL parameters the study link was opened with; each table counts the responses with each value.</p>',
    );
  for (const [key, counts] of keys) parts.push(attributeTable(key, counts, stats.responses));
  const more = stats.segments.untrackedKeys.size;
  if (more > 0)
    parts.push(
      `<p class="note">${more} more attribute keys are not split here; the attributes table has them.</p>`,
    );
  return parts.join('');
}

function share(n: number, of: number): string {
  return of > 0 ? `${Math.round((n / of) * 100)}%` : '';
}

function attributeTable(key: string, counts: AttributeCounts, responses: number): string {
  const values = [...counts.values.entries()].sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1));
  if (values.length > TOP_VALUES && values.every(([, n]) => n === 1))
    return `<p><strong>${e(key)}</strong>: a different value for each of its ${counts.responses} responses (an identifier), so not split.</p>`;
  const rows: (string | number)[][] = values
    .slice(0, TOP_VALUES)
    .map(([value, n]) => [value === '' ? '(empty)' : value, n, share(n, responses)]);
  const rest = values.slice(TOP_VALUES).reduce((sum, [, n]) => sum + n, 0) + counts.untracked;
  const others = values.length - TOP_VALUES;
  if (rest > 0)
    rows.push([
      counts.untracked > 0 ? `other values (more than ${MAX_VALUES - TOP_VALUES})` : `${others} other values`,
      rest,
      share(rest, responses),
    ]);
  const missing = responses - counts.responses;
  if (missing > 0) rows.push(['(not given)', missing, share(missing, responses)]);
  return numberTable(`Responses by ${key}`, [key, 'responses', 'share'], rows);
}
