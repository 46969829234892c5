/**
 * The measured step of bench/statistics.ts, in its own process: one study's rows written as
 * its wide CSV, its .sav or its .dta, by the writers a run uses. The rows are made on the fly
 * (the sandbox's replies, its 20,000- and 40,000-character answers in the first response, six
 * question slots as the sandbox's studies, two attributes), so nothing but the writer holds
 * them; making them is timed apart and taken out of the figure.
 */
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createStatisticsWriter } from '../src/output/formats/statistics.ts';
import { createWideWriter } from '../src/output/formats/wide.ts';
import type { WideColumn, WideRow } from '../src/records.ts';
import { hostileReplies, longReplies, plainReplies } from '../src/sandbox/text.ts';
import { LocalStorage } from '../src/storage/local.ts';

const slots: [string, string | null, string][] = [
  ['dg-1', null, 'What first comes to mind when you think about it?'],
  ['dg-2', null, 'How do you do this today, step by step?'],
  ['dg-3', 'concept-a', 'What do you like or dislike about this concept? [dg-3 / concept-a]'],
  ['dg-3', 'concept-b', 'What do you like or dislike about this concept? [dg-3 / concept-b]'],
  ['dg-4', null, 'Which concept do you prefer, and why?'],
  ['dg-5', null, 'Anything else you would like to add?'],
];

export const benchColumns: WideColumn[] = [
  ...slots.map(([dg, concept, text]) => ({
    key: JSON.stringify([dg, concept]),
    header: text,
    of: 'question' as const,
  })),
  { key: 'utm_source', header: 'attribute: utm_source', of: 'attribute' },
  { key: 'id', header: 'attribute: id', of: 'attribute' },
];

/** The study's rows, one at a time, in a shuffled order (as details finish). */
export function* benchRows(responses: number): Generator<WideRow> {
  const replies = [...hostileReplies, ...plainReplies, ...plainReplies, ...plainReplies];
  for (let i = 0; i < responses; i++) {
    const n = (i * 7919) % responses;
    const cells: Record<string, string> = {};
    benchColumns.forEach((column, c) => {
      if (column.of !== 'question') return;
      cells[column.key] = n === 1 && c < 2 ? longReplies[c]! : replies[(n * 31 + c * 17) % replies.length]!;
    });
    const created = Date.UTC(2025, 0, 1) + n * 60_000;
    yield {
      response_id: `r-${n.toString(16).padStart(8, '0')}-${(n * 2654435761) % 4294967296}`,
      response_number: n + 1,
      created_at: new Date(created).toISOString(),
      updated_at: new Date(created + 3_600_000).toISOString(),
      status: n % 10 === 0 ? 'in progress' : 'complete',
      modality: (['text', 'audio', 'video'] as const)[n % 3]!,
      summary: n % 10 === 0 ? null : `The participant liked it, mostly (${n}).`,
      cells,
      attributes: { utm_source: ['mail', 'ads', 'social'][n % 3]!, id: `p-${n}` },
    };
  }
}

export async function statisticsStep(input: { format: 'wide' | 'sav' | 'dta'; responses: number }) {
  const dir = await mkdtemp(join(tmpdir(), 'study-export-bench-statistics-'));
  try {
    const scratch = join(dir, 'scratch');
    await mkdir(scratch);
    const storage = new LocalStorage(join(dir, 'out'));
    let made = performance.now();
    let count = 0;
    for (const row of benchRows(input.responses)) count += row.response_number === null ? 0 : 1;
    made = performance.now() - made;
    const study = { title: 'Bench study', link_id: 'bench-study' };
    const writer =
      input.format === 'wide'
        ? createWideWriter(storage, scratch, 'bench-study', { bom: false, escape_formulae: true })
        : createStatisticsWriter(input.format, storage, scratch, study, 'bench-study');
    const started = performance.now();
    for (const row of benchRows(input.responses)) await writer.add(row);
    const written = await writer.finish(benchColumns);
    const ms = performance.now() - started - made;
    const path = typeof written === 'string' ? written : written.path;
    const bytes = (await stat(storage.describe(path))).size;
    return { ms, make_rows_ms: made, rows: count, bytes };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
