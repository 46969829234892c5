import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Answer, ListedResponse, SingleResponse, Study } from '../../src/api/resources.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { allPages, api, type Detail, type Item } from '../helpers/sandbox.ts';

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 7 });
});
afterAll(async () => {
  await sandbox.close();
});

async function everything(target: Sandbox) {
  const studies = (await api<Array<{ link_id: string }>>(target, 'list_surveys')).body;
  const items: Array<{ linkId: string; item: Item }> = [];
  const details: Detail[] = [];
  for (const study of studies) {
    for (const item of await allPages(target, study.link_id, '', 1000)) {
      items.push({ linkId: study.link_id, item });
      details.push((await api<Detail>(target, `responses/${study.link_id}/${item.id}`)).body);
    }
  }
  return { studies, items, details };
}

describe('the data set', () => {
  it('validates against the declared resources', async () => {
    const { studies, items, details } = await everything(sandbox);
    for (const study of studies) expect(Study.safeParse(study).success).toBe(true);
    for (const { item } of items) expect(ListedResponse.safeParse(item).success).toBe(true);
    for (const detail of details) expect(SingleResponse.safeParse(detail).success).toBe(true);
  });

  it('has the variety the exporter must survive', async () => {
    const { items, details } = await everything(sandbox);
    const answers = items.flatMap(({ item }) => item['answers_array'] as Answer[]);
    const texts = details.flatMap((d) => d.transcript.map((row) => row.user));

    // concept-specific and general questions; one guide question repeated for two concepts
    expect(answers.some((a) => a.concept_id === null)).toBe(true);
    expect(answers.some((a) => a.concept_id !== null)).toBe(true);
    const first = items[0]!.item['answers_array'] as Answer[];
    const concepts = first.filter((a) => a.discussion_guide_question_id === 'dg-3');
    expect(new Set(concepts.map((a) => a.concept_id)).size).toBe(2);
    expect(new Set(concepts.map((a) => a.question)).size).toBe(1);
    // one answers key per question plus Summary, even with a repeated question text
    const answersObject = items[0]!.item['answers'] as Record<string, string>;
    expect(Object.keys(answersObject)).toHaveLength(first.length + 1);
    expect(answersObject['Summary']).toBeTypeOf('string');

    // intro rows with a null answer_id; answer ids cross-reference
    for (const detail of details) {
      expect(detail.transcript[0]!.answer_id).toBeNull();
      expect(detail.transcript[0]!.discussion_guide_question_id).toBe('intro');
    }
    const itemById = new Map(items.map(({ item }) => [item.id, item]));
    for (const detail of details) {
      const ids = new Set((itemById.get(detail.id)!['answers_array'] as Answer[]).map((a) => a.answer_id));
      for (const row of detail.transcript)
        if (row.answer_id !== null) expect(ids.has(row.answer_id)).toBe(true);
    }

    // hostile user text
    expect(texts.some((t) => t.includes('\n'))).toBe(true);
    expect(texts.some((t) => t.includes('"') && t.includes(','))).toBe(true);
    expect(texts.some((t) => /\p{Extended_Pictographic}/u.test(t))).toBe(true);
    expect(texts.some((t) => /[\u3040-\u30ff]/.test(t))).toBe(true);
    expect(texts.some((t) => /[\u0600-\u06ff]/.test(t))).toBe(true);
    expect(texts.some((t) => /[\u0400-\u04ff]/.test(t))).toBe(true);
    for (const script of ['Devanagari', 'Han', 'Hangul', 'Hebrew', 'Thai', 'Greek']) {
      expect(
        texts.some((t) => new RegExp(`\\p{Script=${script}}`, 'u').test(t)),
        script,
      ).toBe(true);
    }
    // an emoji ZWJ sequence and decomposed (combining) accents
    expect(texts.some((t) => t.includes('\u200d'))).toBe(true);
    expect(texts.some((t) => t.includes('e\u0301'))).toBe(true);
    // long answers: tens of thousands of characters, one past a spreadsheet cell's 32,767
    const long = answers.map((a) => a.answer.length).filter((n) => n > 10_000);
    expect(long.length).toBeGreaterThanOrEqual(2);
    expect(long.some((n) => n > 32_767)).toBe(true);
    expect(long.some((n) => n <= 32_767)).toBe(true);
    const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
    expect(texts.filter((t) => loneSurrogate.test(t))).toEqual([]);
    for (const start of ['=', '+', '-', '@', '\t'])
      expect(
        texts.some((t) => t.startsWith(start)),
        start,
      ).toBe(true);
    expect(texts.some((t) => t === '')).toBe(true);

    // attributes with id and others
    for (const { item } of items) {
      const attributes = item['attributes'] as Record<string, string>;
      expect(attributes['id']).toBeTypeOf('string');
      expect(Object.keys(attributes).length).toBeGreaterThan(1);
    }

    // list items without response_number and updated_at, and with them
    expect(items.some(({ item }) => !('response_number' in item) && !('updated_at' in item))).toBe(true);
    expect(items.some(({ item }) => typeof item['response_number'] === 'number')).toBe(true);

    // updated_at spread: some updated days after creation
    const lag = items
      .filter(({ item }) => typeof item['updated_at'] === 'string')
      .map(({ item }) => Date.parse(item['updated_at'] as string) - Date.parse(item['created_at'] as string));
    expect(lag.some((ms) => ms > 86_400_000)).toBe(true);
    expect(lag.some((ms) => ms < 3_600_000)).toBe(true);
  });

  it('writes short_transcript as bullet lines, one per transcript row', async () => {
    const { items, details } = await everything(sandbox);
    const detailById = new Map(details.map((d) => [d.id, d]));
    for (const { item } of items.slice(0, 30)) {
      const detail = detailById.get(item.id)!;
      const expected = detail.transcript.map(
        (row) => `• ${row.moderator.split(/\s+/).slice(0, 4).join(' ')}`,
      );
      const short = item['short_transcript'] as string;
      for (const prefix of expected) expect(short).toContain(prefix);
      expect(short.startsWith('• ')).toBe(true);
      for (const row of detail.transcript) expect(short).toContain(` → ${row.user}`);
    }
  });

  it('is a deterministic function of the seed', async () => {
    const again = await startSandbox({ seed: 7 });
    const other = await startSandbox({ seed: 8 });
    try {
      const strip = (details: Detail[]) =>
        details.map((d) => ({
          ...d,
          transcript: d.transcript.map((row) => ({ ...row, audio: null, video: null })),
        }));
      const a = await everything(sandbox);
      const b = await everything(again);
      expect(b.studies).toEqual(a.studies);
      expect(b.items).toEqual(a.items);
      expect(strip(b.details)).toEqual(strip(a.details));
      const c = await everything(other);
      expect(c.studies.map((s) => s.link_id)).not.toEqual(a.studies.map((s) => s.link_id));
      expect(c.items.map((i) => i.item.id)).not.toEqual(a.items.map((i) => i.item.id));
    } finally {
      await again.close();
      await other.close();
    }
  });

  it('sizes the data set by studies and responses, and builds 50k responses cheaply', async () => {
    const big = await startSandbox({ studies: 10, responses: 5000 });
    try {
      const studies = big.studies(big.keys.primary).concat(big.studies(big.keys.secondary));
      expect(new Set(studies.map((s) => s.id)).size).toBe(10);
      for (const study of studies) expect(study.desc).toBe(`${study.title} (5000 Responses)`);
      const linkId = studies[0]!.link_id;
      const last = await api<Item[]>(big, `responses/${linkId}?page=4&per_page=1000`);
      expect(last.body).toHaveLength(1000);
      expect((await api<Item[]>(big, `responses/${linkId}?page=5&per_page=1000`)).body).toEqual([]);
      const ids = new Set(big.responses(linkId).map((r) => r.id));
      expect(ids.size).toBe(5000);
    } finally {
      await big.close();
    }
  });
});
