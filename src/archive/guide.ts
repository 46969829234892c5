/**
 * The bag's pages for people: data/README.md (what the bag is, which file is for whom, the
 * codebook of every table from the declarations in tables.ts, how to check and open it),
 * data/report.html (the study's report, as current/'s) and data/index.html, the way in: the
 * study's facts, the list of conversations and each conversation with its recordings
 * playing next to its turns, from the folder, with no server and no network.
 */

import { escapeHtml as e } from '../output/codecs/escape.ts';
import { markdownText } from '../output/guide/codebook.ts';
import { reportHtml } from '../output/guide/report-html.ts';
import type { RunStats } from '../output/guide/run-stats.ts';
import type { HandoffStudyFile } from '../output/handoff-files.ts';
import { type HandoffPrivacy, privacyParagraphs } from '../privacy/index.ts';
import { type Row, tableNames } from '../tables/index.ts';
import { tableSection } from '../tables/markdown.ts';
import { type Conversation, conversationHtml, conversationTitle, htmlPage } from './conversation.ts';

export interface GuideFacts {
  pipeline: string;
  service: string;
  /** The newest run the bag's contents came from. */
  runId: string;
  baggedAt: string;
  /** The study's row as the bag holds it. */
  study: Row<'studies'>;
  responses: number;
  /** The study's figures for report.html, counted as its rows passed. */
  stats: RunStats;
  missing: number;
  recordings: number;
  /** How the bag was made: identified, or de-identified by a profile. */
  privacy: HandoffPrivacy;
  /** The study's file in each study format (wide sheet, workbook, sav, dta), under data/. */
  studyFiles: readonly HandoffStudyFile[];
  /** Raw payloads under provenance/raw/ (none under a profile). */
  rawFiles: number;
}

export function readme(facts: GuideFacts): string {
  const { study } = facts;
  const lines = [
    `# ${markdownText(study?.title ?? '')} (${markdownText(study?.link_id ?? '')})`,
    '',
    '<!-- Written by study-export archive from its table declarations. -->',
    '',
    `This bag holds one study exported by study-export from the Study Responses service at`,
    `${markdownText(facts.service)}: every response in its newest copy, every recording the runs`,
    `archived, and where each came from. Study id \`${study?.study_id ?? ''}\`; newest run`,
    `\`${facts.runId}\` (${facts.baggedAt}).`,
    '',
    '## Privacy',
    '',
    ...privacyParagraphs(facts.privacy, { recordings: true }).flatMap((paragraph) => [
      markdownText(paragraph),
      '',
    ]),
    `${facts.responses} responses, ${facts.recordings - facts.missing} recordings in the bag` +
      (facts.missing > 0 ? `, ${facts.missing} missing (listed in recordings.csv with the reason).` : '.'),
    '',
    '## Which file is for whom',
    '',
    '- **index.html**: open first, in any browser: every conversation, its recordings next to its turns.',
    '- **conversations/**: each conversation as a page (`.html`) and as plain text (`.txt`).',
    '- **recordings/<response>/<turn>-<kind>.<ext>**: every recording in its original format;',
    '  an HLS video is one MPEG-TS (`.ts`) file (VLC, mpv, ffplay), and where no MP4 recording',
    '  of its turn is here, `<turn>-hls.mp4` beside it: the same samples as MP4, for browsers.',
    '- **recordings.csv**: every recording: its file here, the run it came from, or why it is missing.',
    ...facts.studyFiles.map(
      ({ format, path }) => `- **${markdownText(path)}** (${format.fileNoun}): ${format.description}`,
    ),
    '- **tables/<table>.csv** and **.parquet**: the tidy tables below (DuckDB, pandas, R, Spark);',
    '  **datapackage.json** describes them (Frictionless Data).',
    '- **report.html**: responses over time, answered and skipped questions, recordings.',
    ...(facts.rawFiles > 0
      ? [
          '- **provenance/**: runs.json (the runs, their times, the service; never a key) and',
          "  raw/<run id>/<operation>.jsonl.gz, the study's payloads as the service sent them.",
        ]
      : ['- **provenance/runs.json**: the runs, their times, the service; never a key.']),
    '',
    '## Checking the bag',
    '',
    'The folder above data/ is a BagIt 1.0 bag (RFC 8493): `sha256sum -c manifest-sha256.txt`',
    '(or `sha512sum -c manifest-sha512.txt`) in that folder checks every file; any BagIt tool',
    "(bagit-python, the Library of Congress's validators) checks the whole bag.",
    '',
    '## Tables',
    '',
    'Times are UTC. In CSV, an empty cell is a missing value; a cell a spreadsheet would run as a',
    "formula may start with an added '. answers and transcript join on (response_id, answer_id).",
    '',
    ...tableNames.flatMap((table) => tableSection(table, 3)),
  ];
  return `${lines.join('\n')}\n`;
}

export function report(facts: GuideFacts): string {
  const { study, stats } = facts;
  return reportHtml({
    kind: 'current',
    pipeline: facts.pipeline,
    service: facts.service,
    runId: facts.runId,
    startedAt: facts.baggedAt,
    finishedAt: facts.baggedAt,
    studies: [{ study_id: study.study_id, link_id: study.link_id, title: study.title }],
    stats,
    warnings: [],
    mediaEnabled: true,
  });
}

/** index.html's head and study facts, up to its list of conversations (indexListItem each). */
export function indexStart(facts: GuideFacts): string {
  const { study } = facts;
  const head = htmlPage(study.title || 'Study', '').replace(/\n<\/body><\/html>\n$/, '');
  const privacy = privacyParagraphs(facts.privacy, { recordings: true })
    .map((paragraph) => `<p>${e(paragraph)}</p>`)
    .join('\n');
  const files = facts.studyFiles
    .map(({ format, path }) => `<a href="${e(path)}">${e(format.fileNoun)}</a> (${e(path)})`)
    .join(', ');
  return `${head}<h1>${e(study.title)}</h1>
<section class="privacy">
${privacy}
</section>
<dl><dt>link_id</dt><dd>${e(study.link_id)}</dd><dt>Study id</dt><dd>${e(study.study_id)}</dd>
<dt>Created</dt><dd>${e(study.created_at)} UTC</dd><dt>Responses</dt><dd>${facts.responses}</dd>
<dt>Recordings</dt><dd>${facts.recordings - facts.missing} in this bag${facts.missing ? `, ${facts.missing} missing (see <a href="recordings.csv">recordings.csv</a>)` : ''}</dd>
<dt>Service</dt><dd>${e(facts.service)}</dd><dt>Newest run</dt><dd>${e(facts.runId)}</dd></dl>
<p>Also here: <a href="README.md">README.md</a> (what each file is), <a href="report.html">the report</a>,
the tables in <a href="tables/">tables/</a>${files ? `, ${files}` : ''}.</p>
<h2>Conversations</h2>
<ol class="conversations">
`;
}

/** One conversation's entry in index.html's list. */
export function indexListItem(c: Conversation): string {
  return `<li><a href="#${e(c.name)}">${e(conversationTitle(c.response))}</a> ${e(c.response.created_at)} (<a href="conversations/${e(c.name)}.html">page</a>, <a href="conversations/${e(c.name)}.txt">text</a>)</li>
`;
}

/** Between the list and the conversations' sections. */
export const indexListEnd = '</ol>\n';

/** One conversation's section of index.html. */
export function indexSection(conversation: Conversation): string {
  return `<section class="conversation" id="${e(conversation.name)}">
<h2>${e(conversationTitle(conversation.response))}</h2>
${conversationHtml(conversation, '')}
</section>
`;
}

export const indexEnd = '</body></html>\n';

/** A conversation's own page under conversations/. */
export function conversationPage(conversation: Conversation, studyTitle: string): string {
  return htmlPage(
    `${conversationTitle(conversation.response)}: ${studyTitle}`,
    `<p><a href="../index.html">${e(studyTitle)}</a></p>
<h1>${e(conversationTitle(conversation.response))}</h1>
${conversationHtml(conversation, '../')}`,
  );
}
