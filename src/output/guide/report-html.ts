/**
 * report.html: one self-contained page per run (and for current/) to read before opening the
 * tables: per study, responses over time, those still in progress, who answered (responses by
 * modality and by attribute value), what people said (a few answers per question, each
 * concept named), answered and empty answers per question, answer lengths, recordings
 * archived and failed; then the run's warnings and rejects in plain words. Nothing is fetched
 * (inline CSS and SVG, no script), every chart has a title, a description and a table of its
 * numbers, and the page prints. All text from the service or respondents is escaped.
 */
import { conceptName, questionLabel } from '../../concept-name.ts';
import type { SchemaChange } from '../../drift/schema.ts';
import type { Warning } from '../../records.ts';
import { escapeHtml as e, shorten } from '../codecs/escape.ts';
import { type GuideSubject, packageStatement } from './codebook.ts';
import { answersSection, orderedQuestions } from './report-answers.ts';
import { schemaChangesHtml } from './report-schema-changes.ts';
import { segmentsSection } from './report-segments.ts';
import { numberTable } from './report-table.ts';
import { lengthBuckets, type RunStats, type StudyStats } from './run-stats.ts';
import { sampleNote } from './sample.ts';
import { columnBars, stackedBars } from './svg-charts.ts';

export interface ReportStudy {
  study_id: string;
  link_id: string;
  title: string;
  /** updated_since of the export; null for a full one. Absent for current/. */
  since?: string | null;
  error?: string | null;
}

export interface ReportInput extends GuideSubject {
  /** The studies in the order to show them. */
  studies: readonly ReportStudy[];
  stats: RunStats;
  warnings: readonly Warning[];
  mediaEnabled: boolean;
  /** A run's changes on the service since the last committed run (src/drift/). */
  schemaChanges?: { changes: readonly SchemaChange[]; accepted: boolean };
}

const style = `
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:60rem;padding:1rem 1.5rem;color:#111;line-height:1.45}
h1{font-size:1.6rem}h2{font-size:1.3rem;border-top:2px solid #333;padding-top:.8rem;margin-top:2rem}h3{font-size:1.05rem;margin-bottom:.3rem}
table{border-collapse:collapse;margin:.4rem 0 1rem;font-size:.9rem}th,td{border:1px solid #999;padding:.15rem .5rem;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}figure{margin:.5rem 0}figcaption{font-size:.85rem;color:#333}
svg{max-width:100%;height:auto}h4{font-size:1rem;margin:1rem 0 .2rem}
p.identified{border:3px solid #a40000;padding:.5rem .8rem;color:#a40000}.privacy{border-left:3px solid #1f5fa8;padding:.1rem .8rem}
figure.answer{margin:.4rem 0 .6rem;border-left:3px solid #1f5fa8;padding:.1rem .7rem}figure.answer blockquote{margin:0;white-space:pre-wrap;overflow-wrap:anywhere}.note{font-size:.9rem;color:#333}dl{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem}dt{font-weight:600}dd{margin:0}
@media print{body{max-width:none;padding:0;font-size:10pt}h2{break-before:auto}figure,table,section>h3,h4{break-inside:avoid}h3,h4{break-after:avoid}a{color:inherit;text-decoration:none}}
`;

export function reportHtml(input: ReportInput): string {
  const title =
    input.kind === 'run'
      ? `${input.pipeline}: run ${input.runId}`
      : input.kind === 'package'
        ? `${input.studies[0]?.link_id ?? ''}: a study from ${input.pipeline}`
        : `${input.pipeline}: current dataset (after run ${input.runId})`;
  const known = new Set(input.studies.map((s) => s.study_id));
  // Studies with rows but not in the list (current/ keeps studies no longer listed) come last.
  const studies: ReportStudy[] = [
    ...input.studies,
    ...[...input.stats.studies.values()]
      .filter((s) => !known.has(s.study_id))
      .map((s) => ({ study_id: s.study_id, link_id: s.link_id, title: s.title })),
  ];
  const totals = summaryTotals(input.stats);
  const parts = [
    '<!DOCTYPE html>',
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${e(title)}</title>`,
    `<style>${style}</style></head><body>`,
    '<main>',
    `<h1>${e(title)}</h1>`,
    ...privacyParts(input),
    '<dl>',
    `<dt>Service</dt><dd>${e(input.service)}</dd>`,
    input.kind === 'run'
      ? `<dt>Run</dt><dd>${e(input.runId)}, started ${e(input.startedAt)}, finished ${e(input.finishedAt)} (UTC)</dd>`
      : input.kind === 'package'
        ? `<dt>Rows</dt><dd>current/ after run ${e(input.runId)}; packaged ${e(input.finishedAt)} (UTC)</dd>`
        : `<dt>Last updated</dt><dd>by run ${e(input.runId)}, finished ${e(input.finishedAt)} (UTC)</dd>`,
  ];
  if (input.kind === 'run') {
    const full = studies.every((s) => (s.since ?? null) === null);
    parts.push(
      `<dt>Status</dt><dd>${input.status === 'partial' ? 'partial: something was lost or rejected (below)' : 'complete'}</dd>`,
      `<dt>Export</dt><dd>${input.sample ? e(sampleNote(input.sample)) : full ? 'full: every response of each study' : 'incremental: responses created or updated since the last run'}</dd>`,
    );
  }
  parts.push(
    `<dt>Studies</dt><dd>${studies.length}</dd>`,
    `<dt>Responses</dt><dd>${totals.responses} (${totals.inProgress} still in progress)</dd>`,
    `<dt>Recordings</dt><dd>${input.mediaEnabled ? `${totals.archived} archived, ${totals.failed} failed` : 'not downloaded (media off)'}</dd>`,
    '</dl>',
    '<p class="note">All times are UTC. Figures describe the rows in this folder; README.md explains every file and column.</p>',
    '<nav aria-label="Studies"><h2>Contents</h2><ul>',
    ...studies.map(
      (s, i) =>
        `<li><a href="#study-${i + 1}">${e(s.link_id)}${s.title ? `: ${e(shorten(s.title, 80))}` : ''}</a></li>`,
    ),
    ...(input.schemaChanges ? ['<li><a href="#schema-changes">Changes on the service</a></li>'] : []),
    '<li><a href="#problems">Warnings and rejects</a></li></ul></nav>',
  );
  studies.forEach((study, index) => {
    parts.push(studySection(study, input.stats.studies.get(study.study_id), index + 1, input));
  });
  if (input.schemaChanges)
    parts.push(schemaChangesHtml(input.schemaChanges.changes, input.schemaChanges.accepted));
  parts.push(problemsSection(input), '</main></body></html>');
  return `${parts.join('\n')}\n`;
}

/** A package's statement on how it was made, before anything else: a warning when it identifies people. */
function privacyParts(input: ReportInput): string[] {
  if (input.kind !== 'package') return [];
  const privacy = packageStatement(input);
  const paragraphs = privacy.paragraphs;
  if (privacy.identified)
    return paragraphs.map(
      (paragraph) => `<p class="identified" role="alert"><strong>${e(paragraph)}</strong></p>`,
    );
  return [
    '<section aria-label="Privacy" class="privacy">',
    ...paragraphs.map((paragraph) => `<p>${e(paragraph)}</p>`),
    '</section>',
  ];
}

function summaryTotals(stats: RunStats) {
  let responses = 0;
  let inProgress = 0;
  let archived = 0;
  let failed = 0;
  for (const study of stats.studies.values()) {
    responses += study.responses;
    inProgress += study.inProgress;
    for (const counts of study.media.values()) {
      archived += counts.archived;
      failed += counts.failed;
    }
  }
  return { responses, inProgress, archived, failed };
}

function studySection(
  study: ReportStudy,
  stats: StudyStats | undefined,
  n: number,
  input: ReportInput,
): string {
  const id = `study-${n}`;
  const heading = `${study.link_id}${study.title ? `: ${study.title}` : ''}`;
  const parts = [`<section aria-labelledby="${id}"><h2 id="${id}">${e(heading)}</h2>`];
  parts.push(`<p class="note">Study id ${e(study.study_id)}.`);
  if (study.since !== undefined)
    parts.push(study.since === null ? ' Full export.' : ` Responses updated since ${e(study.since)}.`);
  parts.push('</p>');
  if (study.error) parts.push(`<p><strong>This study was not exported whole:</strong> ${e(study.error)}</p>`);
  if (!stats || stats.responses === 0) {
    parts.push('<p>No responses.</p></section>');
    return parts.join('');
  }
  parts.push(overTime(stats, id), progress(stats, id), segmentsSection(stats, id));
  parts.push(answersSection(stats, id, input.kind), questions(stats, id), lengths(stats, id));
  parts.push(recordings(stats, id, input.mediaEnabled), '</section>');
  return parts.join('');
}

function figure(svg: string, caption: string, table: string): string {
  return `<figure>${svg}<figcaption>${e(caption)}</figcaption></figure>${table}`;
}

/** Days between the first and the last response, by day; by month when that spans over 92 days. */
function overTime(stats: StudyStats, id: string): string {
  const days = [...stats.byDay.keys()].sort();
  const first = days[0];
  const last = days.at(-1);
  if (!first || !last) return '';
  const spanDays = (Date.parse(`${last}T00:00:00Z`) - Date.parse(`${first}T00:00:00Z`)) / 86_400_000;
  const byMonth = spanDays > 92;
  const counts = new Map<string, number>();
  if (byMonth) {
    for (const [day, n] of stats.byDay) counts.set(day.slice(0, 7), (counts.get(day.slice(0, 7)) ?? 0) + n);
    for (let m = first.slice(0, 7); m <= last.slice(0, 7); m = nextMonth(m))
      counts.set(m, counts.get(m) ?? 0);
  } else {
    for (let t = Date.parse(`${first}T00:00:00Z`); t <= Date.parse(`${last}T00:00:00Z`); t += 86_400_000) {
      const day = new Date(t).toISOString().slice(0, 10);
      counts.set(day, stats.byDay.get(day) ?? 0);
    }
  }
  const bars = [...counts.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([label, value]) => ({ label, value }));
  const unit = byMonth ? 'month' : 'day';
  const busiest = bars.reduce((a, b) => (b.value > a.value ? b : a));
  const desc = `${stats.responses} responses created from ${first} to ${last}, per ${unit}; the most, ${busiest.value}, on ${busiest.label}.`;
  const svg = columnBars({ id: `${id}-time`, title: `Responses per ${unit} (created_at, UTC)`, desc }, bars, {
    labelEvery: Math.ceil(bars.length / 7),
    unit: 'responses',
  });
  // The table stays short: per week (from Monday) when there are more than two weeks of days.
  const perWeek = !byMonth && bars.length > 14;
  const rows: [string, number][] = [];
  for (const bar of bars) {
    const label = perWeek ? `week of ${weekStart(bar.label)}` : bar.label;
    const last = rows.at(-1);
    if (last && last[0] === label) last[1] += bar.value;
    else rows.push([label, bar.value]);
  }
  const table = numberTable(
    `Responses per ${perWeek ? 'week' : unit}`,
    [perWeek ? 'week' : unit, 'responses'],
    rows.filter(([, n]) => n > 0),
  );
  return `<h3>Responses over time</h3>${figure(svg, desc, table)}`;
}

/** The Monday (UTC) of the week of `day` (YYYY-MM-DD). */
function weekStart(day: string): string {
  const time = Date.parse(`${day}T00:00:00Z`);
  const sinceMonday = (new Date(time).getUTCDay() + 6) % 7;
  return new Date(time - sinceMonday * 86_400_000).toISOString().slice(0, 10);
}

function nextMonth(month: string): string {
  const [y, m] = month.split('-').map(Number) as [number, number];
  return m === 12 ? `${y + 1}-01` : `${y}-${String(m + 1).padStart(2, '0')}`;
}

function progress(stats: StudyStats, id: string): string {
  const complete = stats.responses - stats.inProgress;
  const desc = `${complete} of ${stats.responses} responses complete, ${stats.inProgress} still in progress.`;
  const svg = stackedBars({ id: `${id}-progress`, title: 'Complete and in-progress responses', desc }, [
    {
      label: 'responses',
      segments: [
        { label: 'complete', value: complete, style: 'solid' },
        { label: 'in progress', value: stats.inProgress, style: 'hatched' },
      ],
    },
  ]);
  return (
    '<h3>In progress and complete</h3>' +
    figure(svg, desc, '') +
    '<p class="note">In progress: the service sent the response without a summary, so its analysis was still running; a later run fetches it again once it changes.</p>'
  );
}

function questions(stats: StudyStats, id: string): string {
  const list = orderedQuestions(stats);
  if (list.length === 0) return '<h3>Answers per question</h3><p>No answers.</p>';
  const mostSkipped = list.reduce((a, b) => (b.empty > a.empty ? b : a));
  const desc =
    `${list.length} questions; ` +
    (mostSkipped.empty > 0
      ? `the most empty answers, ${mostSkipped.empty} of ${mostSkipped.answered + mostSkipped.empty}, for question ${mostSkipped.position}.`
      : 'every answer has text.');
  const svg = stackedBars(
    { id: `${id}-questions`, title: 'Answered and empty answers per question', desc },
    list.map((q, i) => ({
      // The concept first: the bar's label is cut, and the concept tells the rows apart.
      label: `${i + 1}. ${q.concept_id ? `${conceptName(q.concept_id)}: ` : ''}${q.question || '(no question text)'}`,
      full: questionLabel(q.question, q.concept_id),
      segments: [
        { label: 'answered', value: q.answered, style: 'solid' as const },
        { label: 'empty', value: q.empty, style: 'hatched' as const },
      ],
    })),
  );
  const rows = list.map((q, i) => [
    `${i + 1}. ${questionLabel(q.question, q.concept_id)}`,
    q.answered,
    q.empty,
  ]);
  return `<h3>Answers per question</h3>${figure(svg, desc, numberTable('Answers per question', ['question', 'answered', 'empty'], rows))}`;
}

function lengths(stats: StudyStats, id: string): string {
  const labels = lengthBuckets.map((bound, i) =>
    i === 0 ? `1–${bound}` : `${lengthBuckets[i - 1]! + 1}–${bound}`,
  );
  labels.push(`over ${lengthBuckets.at(-1)}`);
  const bars = labels.map((label, i) => ({ label, value: stats.lengths[i] ?? 0 }));
  const total = bars.reduce((n, bar) => n + bar.value, 0);
  const desc = `Length in characters of the ${total} answers with text.`;
  const svg = columnBars({ id: `${id}-lengths`, title: 'Answer lengths (characters)', desc }, bars, {
    unit: 'answers',
  });
  const rows = bars.map((bar) => [bar.label, bar.value]);
  return `<h3>Answer lengths</h3>${figure(svg, desc, numberTable('Answers by length in characters', ['characters', 'answers'], rows))}`;
}

const kindNames: Record<string, string> = { audio: 'audio', video: 'video (MP4)', hls: 'video (HLS)' };

function recordings(stats: StudyStats, id: string, media: boolean): string {
  const heading = '<h3>Recordings</h3>';
  const turns = `${stats.turnsWithAudio} turns with audio and ${stats.turnsWithVideo} with video, of ${stats.turns} transcript turns.`;
  if (!media) return `${heading}<p>${e(turns)} Not downloaded: media was off for this export.</p>`;
  if (stats.media.size === 0) return `${heading}<p>${e(turns)} No recording was downloaded.</p>`;
  const kinds = [...stats.media.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
  const archived = kinds.reduce((n, [, c]) => n + c.archived, 0);
  const failed = kinds.reduce((n, [, c]) => n + c.failed, 0);
  const desc = `${archived} recordings archived in media.zip, ${failed} failed. ${turns}`;
  const svg = stackedBars(
    { id: `${id}-media`, title: 'Recordings archived and failed', desc },
    kinds.map(([kind, c]) => ({
      label: kindNames[kind] ?? kind,
      segments: [
        { label: 'archived', value: c.archived, style: 'solid' as const },
        { label: 'failed', value: c.failed, style: 'hatched' as const },
      ],
    })),
  );
  const parts = [heading, figure(svg, desc, '')];
  if (stats.mediaErrors.size > 0) {
    parts.push(
      '<p>Why downloads failed (the media table has each one):</p><ul>',
      ...[...stats.mediaErrors.entries()].map(([reason, n]) => `<li>${n} × ${e(reason)}</li>`),
      '</ul>',
    );
  }
  return parts.join('');
}

function problemsSection(input: ReportInput): string {
  const parts = ['<section aria-labelledby="problems"><h2 id="problems">Warnings and rejects</h2>'];
  const { stats, warnings } = input;
  if (warnings.length === 0 && stats.rejects === 0) {
    parts.push(
      input.kind === 'run'
        ? '<p>None: every record passed validation and nothing needed a warning.</p>'
        : '<p>Each run lists its own warnings and rejects in its report.html and manifest.json.</p>',
    );
  }
  if (warnings.length > 0) {
    parts.push(`<h3>${warnings.length} warning${warnings.length === 1 ? '' : 's'}</h3><ul>`);
    for (const warning of warnings.slice(0, 200)) {
      const where = warning.link_id ? `${warning.link_id}: ` : '';
      parts.push(`<li>${e(where + warning.message)}</li>`);
    }
    if (warnings.length > 200) parts.push(`<li>and ${warnings.length - 200} more in manifest.json</li>`);
    parts.push('</ul>');
  }
  if (stats.rejects > 0) {
    parts.push(
      `<h3>${stats.rejects} rejected record${stats.rejects === 1 ? '' : 's'}</h3>`,
      '<p>These records did not have the shape the service promises, so they are not in the tables; each is kept as received in rejects.jsonl with its reason:</p><ul>',
      ...[...stats.rejectReasons.entries()].map(([reason, n]) => `<li>${n} × ${e(reason)}</li>`),
      '</ul>',
    );
  }
  parts.push('</section>');
  return parts.join('');
}
