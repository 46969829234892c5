/**
 * A study's wide sheet as the statistics files get it, hostile on purpose: the sandbox's
 * replies (quotes, line breaks, formula-like starts, emoji, right-to-left and CJK text, empty
 * replies and its 20,000- and 40,000-character answers), many question slots, slots with ids
 * that cannot be names, in-progress responses, missing numbers and times; and the files the
 * codecs write from it.
 */
import { writeFile } from 'node:fs/promises';
import { encodeDta } from '../../src/output/dta/index.ts';
import { type LabelledValue, Measure } from '../../src/output/labelled/dataset.ts';
import { type WideDataset, wideDataset } from '../../src/output/labelled/wide.ts';
import { encodeSav } from '../../src/output/sav/index.ts';
import type { WideColumn, WideRow } from '../../src/records.ts';
import { hostileReplies, longReplies } from '../../src/sandbox/text.ts';

export const questionKey = (questionId: string, conceptId: string | null) =>
  JSON.stringify([questionId, conceptId]);

export interface HostileWide {
  columns: WideColumn[];
  rows: WideRow[];
  wide: WideDataset;
}

export function hostileWide(slots = 120, responses = 30): HostileWide {
  const columns: WideColumn[] = [];
  for (let n = 1; n <= slots; n++) {
    const concept = n % 7 === 0 ? `concept-${String.fromCharCode(97 + (n % 26))}` : null;
    const text =
      n === 2
        ? `${'A question worded at length, '.repeat(6)}ending here?`
        : `Question ${n}: what do you think? ☕`;
    columns.push({ key: questionKey(`dg-${n}`, concept), header: text, of: 'question' });
  }
  columns.push({ key: questionKey('Q 7/É', null), header: 'سؤال بالعربية 问题', of: 'question' });
  for (const key of ['utm_source', 'lang', 'weird key!'])
    columns.push({ key, header: `attribute: ${key}`, of: 'attribute' });
  const replies = [...hostileReplies, ...longReplies];
  const rows: WideRow[] = [];
  for (let r = 0; r < responses; r++) {
    const cells: Record<string, string> = {};
    columns.forEach((column, c) => {
      if (column.of !== 'question' || (r + c) % 5 === 4) return;
      cells[column.key] = replies[(r * 3 + c) % replies.length]!;
    });
    rows.push({
      response_id: `resp-${r}`,
      response_number: r === 3 ? null : r + 1,
      created_at: new Date(Date.UTC(2025, 2, 12, 18, 18, 53, 934) + r * 3_600_000).toISOString(),
      updated_at: r % 4 === 0 ? null : new Date(Date.UTC(2025, 5, 1, 9, 0, 1) + r * 1000).toISOString(),
      status: r % 3 === 0 ? 'in progress' : 'complete',
      modality: (['text', 'audio', 'video'] as const)[r % 3]!,
      summary: r % 3 === 0 ? null : `Summary ${r} — 要約`,
      cells,
      attributes: r % 2 === 0 ? { utm_source: 'mail', lang: 'ar', 'weird key!': '=HYPERLINK("x")' } : {},
    });
  }
  const wide = wideDataset(
    { title: 'Hostile study ☕ — عربى', link_id: 'hostile-study' },
    columns,
    new Date('2026-11-28T07:45:00Z'),
  );
  return { columns, rows, wide };
}

/** The rows' values, measured, as both codecs take them. */
export function measured(data: HostileWide): { values: LabelledValue[][]; measure: Measure } {
  const values = data.rows.map((row) => data.wide.values(row));
  const measure = new Measure(data.wide.dataset.variables);
  for (const row of values) measure.add(row);
  return { values, measure };
}

export async function writeSavFile(path: string, data: HostileWide): Promise<void> {
  const { values, measure } = measured(data);
  const chunks: Buffer[] = [];
  await encodeSav(data.wide.dataset, measure, values, async (chunk) => void chunks.push(Buffer.from(chunk)));
  await writeFile(path, Buffer.concat(chunks));
}

export async function writeDtaFile(path: string, data: HostileWide): Promise<void> {
  const { values, measure } = measured(data);
  const chunks: Buffer[] = [];
  const strls: Buffer[] = [];
  await encodeDta(data.wide.dataset, measure, values, async (chunk) => void chunks.push(Buffer.from(chunk)), {
    write: async (chunk) => void strls.push(Buffer.from(chunk)),
    read: async function* () {
      yield* strls;
    },
  });
  await writeFile(path, Buffer.concat(chunks));
}
