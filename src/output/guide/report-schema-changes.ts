/**
 * What changed on the service since the last committed run (src/drift/), as report.html says
 * it (and, in the same words, the codebook): per study, each change in one line. The messages
 * quote the service's names as JSON strings; here they are escaped once more for HTML.
 */
import type { SchemaChange } from '../../drift/schema.ts';
import { escapeHtml as e } from '../codecs/escape.ts';

export const schemaChangesIntro =
  "Compared with the last committed run of each study: question slots added or gone, questions reworded, concepts added, URL parameters new or gone, fields the service's specification does not name appearing or disappearing, and JSON types changed. A study's first run records its schema and reports nothing; manifest.json lists each change in schema_changes.";

export function changesByStudy(changes: readonly SchemaChange[]): SchemaChange[][] {
  const studies = new Map<string, SchemaChange[]>();
  for (const change of changes) {
    const list = studies.get(change.study_id) ?? [];
    list.push(change);
    studies.set(change.study_id, list);
  }
  return [...studies.values()];
}

/** report.html's section (its heading's id is `schema-changes`). */
export function schemaChangesHtml(changes: readonly SchemaChange[], accepted: boolean): string {
  const parts = [
    '<section aria-labelledby="schema-changes"><h2 id="schema-changes">Changes on the service</h2>',
    `<p class="note">${e(schemaChangesIntro)}</p>`,
  ];
  if (changes.length === 0) parts.push('<p>None: every study looked as it did in its last run.</p>');
  if (accepted) {
    parts.push(
      '<p><strong>Accepted:</strong> the pipeline file says to stop on a change (schema.on_change: fail); this run was committed with them because it was given --accept-schema-change.</p>',
    );
  }
  for (const list of changesByStudy(changes)) {
    const first = list[0] as SchemaChange;
    parts.push(`<h3>${e(first.link_id)}</h3><p class="note">Study id ${e(first.study_id)}.</p><ul>`);
    for (const change of list) parts.push(`<li><code>${e(change.kind)}</code>: ${e(change.message)}</li>`);
    parts.push('</ul>');
  }
  parts.push('</section>');
  return parts.join('');
}
